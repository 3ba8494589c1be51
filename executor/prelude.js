// The runtime a program sees, installed in every fresh VM before it runs.
// It evaluates to the host's private handle {install, settle}; the host
// functions it captures (__cc_*) are removed from the global object, so the
// only way out of the sandbox is tools.call and the namespaces built on it.
(function () {
  "use strict";
  const g = globalThis;
  const hostCall = g.__cc_call;
  const hostLog = g.__cc_log;
  const hostDone = g.__cc_done;
  const hostProgress = g.__cc_progress;
  delete g.__cc_progress;
  delete g.__cc_call;
  delete g.__cc_log;
  delete g.__cc_done;

  // Built-ins the runtime relies on, captured before any program runs: a
  // program may replace the originals, but cannot break its own result.
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const isArray = Array.isArray;
  const isView = ArrayBuffer.isView;
  const keys = Object.keys;
  const getPrototypeOf = Object.getPrototypeOf;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const apply = Reflect.apply;
  const then = Promise.prototype.then;
  const ObjectProto = Object.prototype;
  const MapCtor = Map;
  const SetCtor = Set;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const toStr = String;
  const finite = isFinite;
  const mapEntries = Map.prototype.entries;
  const hasOwn = Object.prototype.hasOwnProperty;
  const ProxyCtor = Proxy;
  const split = String.prototype.split;
  const indexOf = String.prototype.indexOf;
  const strSlice = String.prototype.slice;
  const join = Array.prototype.join;
  const setValues = Set.prototype.values;

  const maxDepth = 256;
  const limits = { logBytes: 65536, resultBytes: 1048576 };

  class ToolError extends Error {
    constructor(message, code, tool, problems) {
      super(message);
      this.name = "ToolError";
      this.code = code;
      this.tool = tool;
      if (problems !== undefined) this.problems = problems;
    }
  }

  function isPlainObject(v) {
    if (v === null || typeof v !== "object") return false;
    const p = getPrototypeOf(v);
    return p === ObjectProto || p === null;
  }

  // siteError makes an error whose stack starts at the program's own
  // frame: it drops the frames of siteError and of the skip-1 runtime
  // functions above the caller, so positions point at the program's line.
  function siteError(Ctor, message, skip) {
    const e = new Ctor(message);
    if (Ctor === ToolError) skip++; // its constructor's own frame
    const lines = apply(split, toStr(e.stack), ["\n"]);
    const kept = [];
    for (let i = skip; i < lines.length; i++) kept[kept.length] = lines[i];
    defineProperty(e, "stack", { value: apply(join, kept, ["\n"]), writable: true, configurable: true });
    return e;
  }

  // call starts a tool call in Go and returns a promise for its result.
  // Several calls started before awaiting run concurrently. skip counts
  // the runtime frames between siteError and the program.
  function call(name, args, skip) {
    if (typeof name !== "string") {
      throw siteError(TypeErrorCtor, 'tools.call: the first argument must be a tool name such as "util.echo"', skip);
    }
    if (args === undefined) args = {};
    let json;
    try {
      json = stringify(toPlain(args, "args", []));
    } catch (e) {
      throw siteError(TypeErrorCtor, name + ": " + (e && e.message ? e.message : toStr(e)), skip);
    }
    const failure = siteError(ToolError, "", skip);
    return apply(then, hostCall(name, json), [undefined, function (e) {
      failure.message = e.message;
      failure.code = e.code;
      failure.tool = e.tool || name;
      if (e.problems !== undefined) failure.problems = e.problems;
      throw failure;
    }]);
  }

  function makeFunction(name, positional) {
    const f = function () {
      const a = arguments;
      if (a.length === 0) return call(name, {}, 3);
      if (a.length === 1 && isPlainObject(a[0])) return call(name, a[0], 3);
      if (positional.length === 0) {
        throw siteError(TypeErrorCtor, name + " takes one object argument, as in " + name + "({...})", 2);
      }
      if (a.length > positional.length) {
        throw siteError(TypeErrorCtor, name + " takes at most " + positional.length +
          " positional arguments, got " + a.length, 2);
      }
      const args = {};
      for (let i = 0; i < a.length; i++) {
        if (a[i] !== undefined) args[positional[i]] = a[i];
      }
      return call(name, args, 3);
    };
    defineProperty(f, "name", { value: name });
    return f;
  }

  // namespace is a category's object: a read-only view whose functions are
  // made on first use, so that preparing a VM costs the same for a
  // category of three tools as for one of three hundred.
  function namespace(ns, tools) {
    const made = Object.create(null);
    const own = function (k) {
      return typeof k === "string" && apply(hasOwn, tools, [k]);
    };
    const fn = function (k) {
      let f = made[k];
      if (f === undefined) f = made[k] = makeFunction(ns + "." + k, tools[k]);
      return f;
    };
    const refuse = function () {
      return false;
    };
    return new ProxyCtor({}, {
      get: function (t, k) {
        return own(k) ? fn(k) : t[k];
      },
      has: function (t, k) {
        return own(k);
      },
      ownKeys: function () {
        return keys(tools);
      },
      getOwnPropertyDescriptor: function (t, k) {
        return own(k) ? { value: fn(k), writable: false, enumerable: true, configurable: true } : undefined;
      },
      set: refuse,
      defineProperty: refuse,
      deleteProperty: refuse,
      setPrototypeOf: refuse,
    });
  }

  function inspect(v) {
    if (typeof v === "string") return v;
    if (v === undefined) return "undefined";
    if (typeof v === "function") return "[Function " + (v.name || "anonymous") + "]";
    if (typeof v === "symbol") return toStr(v);
    if (typeof v === "bigint") return toStr(v) + "n";
    if (v instanceof ErrorCtor) return v.stack ? v.name + ": " + v.message + "\n" + v.stack.trimEnd() : toStr(v);
    try {
      const seen = [];
      return stringify(v, function (k, x) {
        if (typeof x === "bigint") return toStr(x) + "n";
        if (typeof x === "function") return "[Function " + (x.name || "anonymous") + "]";
        if (typeof x === "symbol") return toStr(x);
        if (x === undefined) return "undefined";
        if (x !== null && typeof x === "object") {
          if (contains(seen, x)) return "[Circular]";
          seen[seen.length] = x;
          if (x instanceof MapCtor || x instanceof SetCtor) return toPlain(x, "", []);
        }
        return x;
      });
    } catch (e) {
      return toStr(v);
    }
  }

  const levels = ["log", "info", "warn", "error", "debug"];
  const console = {};
  levels.forEach(function (level, n) {
    console[level] = function () {
      let s = "";
      for (let i = 0; i < arguments.length; i++) {
        if (i > 0) s += " ";
        s += inspect(arguments[i]);
        if (s.length > limits.logBytes) break; // the host ends the run
      }
      hostLog(n, s);
    };
  });
  console.trace = console.debug;

  function contains(list, x) {
    for (let i = 0; i < list.length; i++) if (list[i] === x) return true;
    return false;
  }

  // toPlain turns a program's value into plain JSON data, or throws an
  // error that says where the value cannot be represented.
  function toPlain(v, path, stack) {
    switch (typeof v) {
      case "string":
      case "boolean":
        return v;
      case "number":
        return finite(v) ? v : null;
      case "undefined":
        return undefined;
      case "function":
        throw new TypeErrorCtor(path + " is a function; return data, not functions");
      case "symbol":
        throw new TypeErrorCtor(path + " is a symbol, which has no JSON form");
      case "bigint":
        throw new TypeErrorCtor(path + " is a BigInt; convert it with String() or Number() first");
    }
    if (v === null) return null;
    if (stack.length >= maxDepth) {
      throw new TypeErrorCtor(path + " is nested more than " + maxDepth + " levels deep; flatten the result");
    }
    if (contains(stack, v)) {
      throw new TypeErrorCtor(path + " refers back to one of its parents (a cycle); return a copy without the cycle");
    }
    stack[stack.length] = v;
    let out;
    if (typeof v.toJSON === "function") {
      out = toPlain(v.toJSON(), path, stack);
    } else if (isArray(v) || isView(v)) {
      out = [];
      for (let i = 0; i < v.length; i++) {
        const x = toPlain(v[i], path + "[" + i + "]", stack);
        out[i] = x === undefined ? null : x;
      }
    } else if (v instanceof MapCtor) {
      out = {};
      for (const [k, x] of apply(mapEntries, v, [])) {
        const y = toPlain(x, path + "." + toStr(k), stack);
        if (y !== undefined) out[toStr(k)] = y;
      }
    } else if (v instanceof SetCtor) {
      out = [];
      for (const x of apply(setValues, v, [])) {
        const y = toPlain(x, path + "[" + out.length + "]", stack);
        out[out.length] = y === undefined ? null : y;
      }
    } else if (v instanceof ErrorCtor) {
      out = { name: toStr(v.name), message: toStr(v.message) };
      if (v.code !== undefined) out.code = toPlain(v.code, path + ".code", stack);
    } else if (v instanceof PromiseCtor) {
      throw new TypeErrorCtor(path + " is a Promise; await it first");
    } else {
      out = {};
      const ks = keys(v);
      for (let i = 0; i < ks.length; i++) {
        const y = toPlain(v[ks[i]], path + "." + ks[i], stack);
        if (y !== undefined) out[ks[i]] = y;
      }
    }
    stack.length--;
    return out;
  }

  function describe(e) {
    try {
      if (e instanceof ErrorCtor) {
        const d = { name: toStr(e.name), message: toStr(e.message), stack: toStr(e.stack || "") };
        if (e.code !== undefined) d.code = toStr(e.code);
        if (e.tool !== undefined) d.tool = toStr(e.tool);
        if (isArray(e.problems)) d.problems = e.problems;
        return stringify(d);
      }
      let text;
      try {
        text = typeof e === "string" ? e : stringify(toPlain(e, "value", []));
      } catch (_) {
        text = toStr(e);
      }
      return stringify({ name: "", message: toStr(text), thrown: typeof e });
    } catch (_) {
      return '{"name":"","message":"an exception that cannot be described"}';
    }
  }

  function finish(value) {
    let json;
    try {
      const plain = toPlain(value, "result", []);
      json = plain === undefined ? "null" : stringify(plain);
    } catch (e) {
      let d;
      try {
        d = e instanceof TypeErrorCtor ?
          stringify({ name: "TypeError", message: toStr(e.message), kind: "result_not_serializable" }) :
          describe(e);
      } catch (_) {
        d = '{"name":"","message":"the result cannot be converted to JSON"}';
      }
      hostDone(false, d);
      return;
    }
    if (json.length > limits.resultBytes) {
      hostDone(false, '{"name":"RangeError","message":"result too large","kind":"result_too_large","size":' + json.length + "}");
      return;
    }
    hostDone(true, json);
  }

  g.tools = freeze({
    call: function (name, args) {
      return call(name, args, 3);
    },
    // paginate calls a list operation page after page and resolves to
    // all its items, at most opts.max: tools.paginate(github.issues_list_for_repo,
    // {owner, repo}, {max: 500}). The first argument is the tool's function
    // or its qualified name; the pages are fetched by the paginate tool of
    // the tool's category, {tool, args, max}, which the sources that
    // paginate (OpenAPI documents) provide.
    paginate: function (fn, args, opts) {
      const name = typeof fn === "function" ? fn.name : fn;
      const dot = typeof name === "string" ? apply(indexOf, name, ["."]) : -1;
      if (dot <= 0) {
        throw siteError(TypeErrorCtor, "tools.paginate: the first argument must be a tool function such as github.issues_list_for_repo, or its qualified name", 2);
      }
      if (opts !== undefined && !isPlainObject(opts)) {
        throw siteError(TypeErrorCtor, "tools.paginate: the third argument must be an object such as {max: 500}", 2);
      }
      const req = { tool: apply(strSlice, name, [dot + 1]), args: args === undefined ? {} : args };
      if (opts !== undefined && opts.max !== undefined) req.max = opts.max;
      return call(apply(strSlice, name, [0, dot]) + ".paginate", req, 3);
    },
  });
  // progress reports how far the program got; the client sees it when it
  // asked for progress notifications.
  g.progress = function progress(message, fraction) {
    hostProgress(message === undefined ? "" : toStr(message), fraction === undefined ? -1 : +fraction);
  };
  g.console = console;
  defineProperty(g, "ToolError", { value: ToolError, writable: true, configurable: true });

  return {
    // install creates a namespace object per category, with a function per
    // tool, from [[qualifiedName, [positional...]], ...], and sets limits.
    install: function (layoutJSON, logBytes, resultBytes) {
      limits.logBytes = logBytes;
      limits.resultBytes = resultBytes;
      const layout = parse(layoutJSON);
      const spaces = keys(layout);
      for (let i = 0; i < spaces.length; i++) {
        const ns = spaces[i];
        if (ns in g) continue; // never shadow a built-in; tools.call still works
        defineProperty(g, ns, { value: namespace(ns, layout[ns]), writable: true, configurable: true });
      }
    },
    // setArgs installs the global args of a program run as a tool.
    setArgs: function (argsJSON) {
      defineProperty(g, "args", { value: parse(argsJSON), writable: true, configurable: true });
    },
    // settle reports the outcome of the program's promise to the host. A
    // program evaluated as a global script resolves to {value}.
    settle: function (p, wrapped) {
      apply(then, p, [function (r) {
        finish(wrapped ? r : r.value);
      }, function (e) {
        hostDone(false, describe(e));
      }]);
    },
  };
})()
