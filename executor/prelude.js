// The runtime a program sees, installed in every fresh VM before it runs.
// It evaluates to the host's private handle {install, begin, settle,
// settleCall}; the host functions it captures (__cc_*) are removed from the
// global object, so the only way out of the sandbox is tools.call and the
// namespaces built on it.
//
// The program runs after this file and may replace any built-in or plant
// accessors on any prototype. So the runtime captures what it uses first,
// writes only into objects and arrays it made without a prototype (no
// setter a program planted can see those writes, and JSON.stringify finds
// no toJSON on them), and lets no frame of its own pass for the
// program's: its bytecode is named <ccrt>, where the program is <eval>.
(function () {
  "use strict";
  const g = globalThis;
  const hostCall = g.__cc_call;
  const hostLog = g.__cc_log;
  const hostDone = g.__cc_done;
  const hostProgress = g.__cc_progress;
  const hostHeap = g.__cc_heap;
  delete g.__cc_heap;
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
  const getOwnPropertyNames = Object.getOwnPropertyNames;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const ArrayProto = Array.prototype;
  const InternalErrorCtor = g.InternalError;
  const setPrototypeOf = Object.setPrototypeOf;
  const defineProperty = Object.defineProperty;
  const deleteProperty = Reflect.deleteProperty;
  const freeze = Object.freeze;
  const apply = Reflect.apply;
  const then = Promise.prototype.then;
  const ObjectProto = Object.prototype;
  const MapCtor = Map;
  const SetCtor = Set;
  const PromiseCtor = Promise;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const ReferenceErrorCtor = ReferenceError;
  const toLower = String.prototype.toLowerCase;
  const toStr = String;
  const finite = isFinite;
  const mapForEach = Map.prototype.forEach;
  const setForEach = Set.prototype.forEach;
  const hasOwn = Object.prototype.hasOwnProperty;
  const ProxyCtor = Proxy;
  const split = String.prototype.split;
  const indexOf = String.prototype.indexOf;
  const slice = String.prototype.slice;
  const join = Array.prototype.join;

  const maxDepth = 256;
  let logBytes = 65536;

  // list is an array without a prototype: writing list[i] defines an
  // element, whatever accessors a program put on Array.prototype.
  function list() {
    return setPrototypeOf([], null);
  }

  // put defines an own property; a setter on a prototype never sees it.
  function put(o, k, v) {
    defineProperty(o, k, { __proto__: null, value: v, writable: true, enumerable: true, configurable: true });
  }

  // encode is JSON.stringify for the plain data toPlain makes. QuickJS's
  // JSON.stringify keeps its own bookkeeping in ordinary arrays, so an
  // accessor a program planted on Array.prototype[0] breaks it for
  // objects and arrays; then encode writes the JSON itself.
  function encode(v) {
    try {
      return stringify(v);
    } catch (e) {
      return encodeSlowly(v);
    }
  }

  function encodeSlowly(v) {
    if (v === null) return "null";
    switch (typeof v) {
      case "string":
        return stringify(v);
      case "number":
        return finite(v) ? toStr(v) : "null";
      case "boolean":
        return v ? "true" : "false";
      case "undefined":
        return "null";
    }
    let s;
    if (isArray(v)) {
      s = "[";
      for (let i = 0; i < v.length; i++) {
        if (i > 0) s += ",";
        s += encodeSlowly(v[i]);
      }
      return s + "]";
    }
    s = "{";
    const ks = keys(v);
    for (let i = 0; i < ks.length; i++) {
      const x = v[ks[i]];
      if (x === undefined) continue;
      if (s.length > 1) s += ",";
      s += stringify(ks[i]) + ":" + encodeSlowly(x);
    }
    return s + "}";
  }

  class ToolError extends Error {
    constructor(message, code, tool, problems) {
      super(message);
      put(this, "name", "ToolError");
      put(this, "code", code);
      put(this, "tool", tool);
      if (problems !== undefined) put(this, "problems", problems);
    }
  }
  defineProperty(ToolError.prototype, "name", { __proto__: null, value: "ToolError", writable: true, configurable: true });

  function isPlainObject(v) {
    if (v === null || typeof v !== "object") return false;
    const p = getPrototypeOf(v);
    return p === ObjectProto || p === null;
  }

  // siteStack is the stack of an error made at a call site, less the
  // first skip frames: those of the runtime above the program's own.
  function siteStack(site, skip) {
    const lines = apply(split, toStr(site.stack), ["\n"]);
    const kept = list();
    for (let i = skip; i < lines.length; i++) kept[kept.length] = lines[i];
    return apply(join, kept, ["\n"]);
  }

  // siteError makes an error whose stack starts at the program's own
  // frame: it drops the frames of siteError and of the skip-1 runtime
  // functions above the caller, so positions point at the program's line.
  function siteError(Ctor, message, skip) {
    const e = new Ctor(message);
    defineProperty(e, "stack", { __proto__: null, value: siteStack(e, skip), writable: true, configurable: true });
    return e;
  }

  // call starts a tool call in the host and returns a promise for its
  // result. Several calls started before awaiting run concurrently. skip
  // counts the runtime frames between siteError and the program.
  function call(name, args, skip) {
    if (typeof name !== "string") {
      throw siteError(TypeErrorCtor, 'tools.call: the first argument must be a tool name such as "util.echo"', skip);
    }
    let json;
    try {
      json = argsJSON(args);
    } catch (e) {
      throw siteError(TypeErrorCtor, name + ": " + (e && e.message ? e.message : toStr(e)), skip);
    }
    return hostCall(name, json);
  }

  // argsJSON encodes a call's arguments. The common case, an object of
  // strings, numbers, booleans and nulls, is encoded as it is; anything
  // else goes through toPlain, which says where a value has no JSON form.
  function argsJSON(args) {
    if (args === undefined) return "{}";
    if (isPlainObject(args)) {
      const ks = keys(args);
      let flat = true;
      for (let i = 0; i < ks.length && flat; i++) {
        const v = args[ks[i]];
        const t = typeof v;
        flat = t === "string" || t === "boolean" || v === null || (t === "number" && finite(v));
      }
      if (flat && typeof args.toJSON !== "function") return encode(args);
    }
    return encode(toPlain(args, "args", list()));
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
      const args = { __proto__: null };
      for (let i = 0; i < a.length; i++) {
        if (a[i] !== undefined) args[positional[i]] = a[i];
      }
      return call(name, args, 3);
    };
    defineProperty(f, "name", { __proto__: null, value: name });
    return f;
  }

  // namespace is a category's object: a read-only view whose functions are
  // made on first use, so that preparing a VM costs the same for a
  // category of three tools as for one of three hundred.
  //
  // A name the category does not have still reads as a function, one that
  // calls the tool by that name: the call fails as any call of an unknown
  // tool does, with a ToolError of code unknown_tool from the dispatcher,
  // which names the nearest tool. A misspelled github.search_issuez({})
  // then says what went wrong instead of "not a function", and a tool
  // added to the catalogue after the VM was prepared is reachable. The
  // price is that typeof ns.anything is "function"; `"name" in ns`,
  // Object.keys(ns) and hasOwnProperty list only the tools that exist, and
  // are the way to test for one. Names every object answers (toString,
  // constructor, …), symbols and "then" (so that a namespace is never
  // taken for a promise) read as on an ordinary object.
  function namespace(ns, tools) {
    const made = { __proto__: null };
    const own = function (k) {
      return typeof k === "string" && apply(hasOwn, tools, [k]);
    };
    const fn = function (k) {
      let f = made[k];
      if (f === undefined) f = made[k] = makeFunction(ns + "." + k, own(k) ? tools[k] : list());
      return f;
    };
    const refuse = function () {
      return false;
    };
    return new ProxyCtor({}, {
      get: function (t, k) {
        const f = made[k];
        if (f !== undefined) return f;
        if (own(k)) return fn(k);
        if (typeof k !== "string" || k === "then" || k in ObjectProto) return t[k];
        return fn(k);
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
      const seen = list();
      return stringify(v, function (k, x) {
        if (typeof x === "bigint") return toStr(x) + "n";
        if (typeof x === "function") return "[Function " + (x.name || "anonymous") + "]";
        if (typeof x === "symbol") return toStr(x);
        if (x === undefined) return "undefined";
        if (x !== null && typeof x === "object") {
          if (contains(seen, x)) return "[Circular]";
          seen[seen.length] = x;
          if (x instanceof MapCtor || x instanceof SetCtor) return toPlain(x, "", list());
        }
        return x;
      });
    } catch (e) {
      return toStr(v);
    }
  }

  const levels = ["log", "info", "warn", "error", "debug"];
  const console = {};
  for (let n = 0; n < levels.length; n++) {
    console[levels[n]] = function () {
      let s = "";
      for (let i = 0; i < arguments.length; i++) {
        if (i > 0) s += " ";
        s += inspect(arguments[i]);
        if (s.length > logBytes) {
          s = apply(slice, s, [0, logBytes + 1]); // the host ends the run
          break;
        }
      }
      hostLog(n, s);
    };
  }
  console.trace = console.debug;

  function contains(xs, x) {
    for (let i = 0; i < xs.length; i++) if (xs[i] === x) return true;
    return false;
  }

  // toPlain turns a program's value into plain JSON data, or throws an
  // error that says where the value cannot be represented. What it makes
  // has no prototypes.
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
      out = list();
      for (let i = 0; i < v.length; i++) {
        const x = toPlain(v[i], path + "[" + i + "]", stack);
        out[i] = x === undefined ? null : x;
      }
    } else if (v instanceof MapCtor) {
      out = { __proto__: null };
      apply(mapForEach, v, [function (x, k) {
        const y = toPlain(x, path + "." + toStr(k), stack);
        if (y !== undefined) out[toStr(k)] = y;
      }]);
    } else if (v instanceof SetCtor) {
      out = list();
      apply(setForEach, v, [function (x) {
        const y = toPlain(x, path + "[" + out.length + "]", stack);
        out[out.length] = y === undefined ? null : y;
      }]);
    } else if (v instanceof ErrorCtor) {
      out = { __proto__: null, name: toStr(v.name), message: toStr(v.message) };
      if (v.code !== undefined) out.code = toPlain(v.code, path + ".code", stack);
    } else if (v instanceof PromiseCtor) {
      throw new TypeErrorCtor(path + " is a Promise; await it first");
    } else {
      out = { __proto__: null };
      const ks = keys(v);
      for (let i = 0; i < ks.length; i++) {
        const y = toPlain(v[ks[i]], path + "." + ks[i], stack);
        if (y !== undefined) out[ks[i]] = y;
      }
    }
    stack.length--;
    return out;
  }

  // absentHints say what to use instead of what a sandbox does not have,
  // for the names programs written for Node or a browser reach for first.
  const noTimers = "a run has no timers: to wait, await util.sleep({ms}); to run calls together, await Promise.all([...])";
  const noNetwork = "a program has no network: HTTP APIs are reached through tool sources (an OpenAPI description or an MCP server in codecell's configuration), whose tools are namespaces here; search_tools finds them";
  const noModules = "a program has no modules: the catalogue's tools are global namespaces already (await util.echo({text: 'hi'})), and helpers are functions in the program";
  const noProcess = "a program has no process or environment: values come from tools and from the program itself, and credentials stay with the tool sources, which add them to their calls";
  const noBrowser = "a program runs in a sandbox, not a browser: its global object is globalThis";
  const absentHints = {
    __proto__: null,
    setTimeout: noTimers, setInterval: noTimers, setImmediate: noTimers, clearTimeout: noTimers, clearInterval: noTimers,
    fetch: noNetwork, XMLHttpRequest: noNetwork, WebSocket: noNetwork,
    require: noModules, module: noModules, exports: noModules, __dirname: noModules, __filename: noModules,
    process: noProcess, Deno: noProcess, Bun: noProcess,
    window: noBrowser, document: noBrowser, localStorage: noBrowser, navigator: noBrowser,
  };
  // namespaceNames are the namespaces install made, for suggestions.
  let namespaceNames = list();

  // withHint adds to the message of a ReferenceError ("'fetch' is not
  // defined") what to use instead, or the namespace the name is close to.
  function withHint(message) {
    const suffix = "' is not defined";
    const n = message.length - suffix.length;
    if (n < 2 || message[0] !== "'" || apply(slice, message, [n]) !== suffix) return message;
    const name = apply(slice, message, [1, n]);
    if (apply(hasOwn, absentHints, [name])) return message + ": " + absentHints[name];
    const near = closestNamespace(name);
    if (near !== "") return message + "; did you mean the namespace " + near + "?";
    return message;
  }

  // closestNamespace is the installed namespace nearest name: the same in
  // lower case, else a few edits away, else "".
  function closestNamespace(name) {
    const lower = apply(toLower, name, []);
    const limit = name.length < 8 ? 1 : name.length < 12 ? 2 : 3;
    let best = "", bestD = limit + 1;
    for (let i = 0; i < namespaceNames.length; i++) {
      const ns = namespaceNames[i];
      if (ns === lower) return ns;
      const d = editDistance(lower, ns, bestD);
      if (d < bestD) {
        best = ns;
        bestD = d;
      }
    }
    return best;
  }

  // editDistance is the Levenshtein distance of a and b, or limit when it
  // is limit or more.
  function editDistance(a, b, limit) {
    if (a.length - b.length >= limit || b.length - a.length >= limit || a.length > 64 || b.length > 64) return limit;
    let prev = list();
    for (let j = 0; j <= b.length; j++) prev[j] = j;
    for (let i = 1; i <= a.length; i++) {
      const cur = list();
      cur[0] = i;
      let rowMin = i;
      for (let j = 1; j <= b.length; j++) {
        const cost = a[i - 1] === b[j - 1] ? 0 : 1;
        let v = prev[j - 1] + cost;
        if (prev[j] + 1 < v) v = prev[j] + 1;
        if (cur[j - 1] + 1 < v) v = cur[j - 1] + 1;
        cur[j] = v;
        if (v < rowMin) rowMin = v;
      }
      if (rowMin >= limit) return limit;
      prev = cur;
    }
    return prev[b.length] < limit ? prev[b.length] : limit;
  }

  function describe(e) {
    try {
      if (e instanceof ErrorCtor) {
        let message = toStr(e.message);
        if (e instanceof ReferenceErrorCtor) message = withHint(message);
        const d = { __proto__: null, name: toStr(e.name), message: message, stack: toStr(e.stack || "") };
        if (e.code !== undefined) d.code = toStr(e.code);
        if (e.tool !== undefined) d.tool = toStr(e.tool);
        if (isArray(e.problems)) d.problems = toPlain(e.problems, "problems", list());
        return encode(d);
      }
      let text;
      try {
        text = typeof e === "string" ? e : encode(toPlain(e, "value", list()));
      } catch (_) {
        text = toStr(e);
      }
      return encode({ __proto__: null, name: "", message: toStr(text), thrown: e === null ? "null" : typeof e });
    } catch (_) {
      return '{"name":"","message":"an exception that cannot be described"}';
    }
  }

  // outOfMemory reports whether e is how the engine says the heap is full.
  function outOfMemory(e) {
    return e === null || (InternalErrorCtor !== undefined && e instanceof InternalErrorCtor && e.message === "out of memory");
  }

  // planted reports whether the program has put something on the array
  // prototypes that JSON.stringify's own arrays would run: an index
  // accessor, or another prototype for Array.prototype.
  function planted() {
    if (getPrototypeOf(ArrayProto) !== ObjectProto) return true;
    const protos = [ArrayProto, ObjectProto];
    for (let p = 0; p < 2; p++) {
      const names = getOwnPropertyNames(protos[p]);
      for (let i = 0; i < names.length; i++) {
        const n = names[i];
        if (toStr(+n >>> 0) !== n) continue;
        const d = getOwnPropertyDescriptor(protos[p], n);
        if (d.get !== undefined || d.set !== undefined) return true;
      }
    }
    return false;
  }

  // finish hands the program's result to the host as JSON. A result too
  // large to encode within the heap is encoded again with the heap
  // limit lifted (hostHeap), when no code of the program can run during
  // the encoding; the host restores the limit with hostDone.
  function finish(value) {
    let json;
    try {
      const plain = toPlain(value, "result", list());
      if (plain === undefined) {
        json = "null";
      } else {
        try {
          json = encode(plain);
        } catch (e) {
          if (!outOfMemory(e) || planted()) throw e;
          hostHeap();
          json = encode(plain);
        }
      }
    } catch (e) {
      let d;
      try {
        d = e instanceof TypeErrorCtor ?
          encode({ __proto__: null, name: "TypeError", message: toStr(e.message), kind: "result_not_serializable" }) :
          describe(e);
      } catch (_) {
        d = '{"name":"","message":"the result cannot be converted to JSON"}';
      }
      hostDone(false, d);
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
    // {owner, repo}, {max: 500, maxBytes: 8e6}). The first argument is the
    // tool's function or its qualified name. Each page is one call of the
    // paginate tool of the tool's category, {tool, args, max, max_bytes,
    // next}, which the sources that paginate (OpenAPI documents) provide:
    // it returns the page's items and the continuation to the next, and
    // the pages are gathered here, in the program's heap. In a dry run an
    // operation that is not read-only is recorded, not paged: the result
    // is its placeholder.
    paginate: function (fn, args, opts) {
      const name = typeof fn === "function" ? fn.name : fn;
      const dot = typeof name === "string" ? apply(indexOf, name, ["."]) : -1;
      if (dot <= 0) {
        throw siteError(TypeErrorCtor, "tools.paginate: the first argument must be a tool function such as github.issues_list_for_repo, or its qualified name", 2);
      }
      if (opts !== undefined && !isPlainObject(opts)) {
        throw siteError(TypeErrorCtor, "tools.paginate: the third argument must be an object such as {max: 500}", 2);
      }
      const helper = apply(slice, name, [0, dot]) + ".paginate";
      const tool = apply(slice, name, [dot + 1]);
      const a = args === undefined ? {} : args;
      const req = { __proto__: null, tool: tool, args: a };
      if (opts !== undefined && opts.max !== undefined) req.max = opts.max;
      if (opts !== undefined && opts.maxBytes !== undefined) req.max_bytes = opts.maxBytes;
      const items = [];
      let n = 0;
      const step = function (page) {
        if (page === null || typeof page !== "object") return page;
        if (apply(hasOwn, page, ["planned"])) return page.planned;
        const got = apply(hasOwn, page, ["items"]) ? page.items : undefined;
        if (isArray(got)) {
          for (let i = 0; i < got.length; i++) put(items, n++, got[i]);
        }
        if (!apply(hasOwn, page, ["next"]) || typeof page.next !== "string") return items;
        return apply(then, call(helper, { __proto__: null, tool: tool, args: a, next: page.next }, 3), [step]);
      };
      return apply(then, call(helper, req, 3), [step]);
    },
  });
  // progress reports how far the program got; the client sees it when it
  // asked for progress notifications.
  g.progress = function progress(message, fraction) {
    const m = message === undefined ? "" : toStr(message);
    hostProgress(m.length > 1024 ? apply(slice, m, [0, 1024]) : m, fraction === undefined ? -1 : +fraction);
  };
  g.console = console;
  defineProperty(g, "ToolError", { value: ToolError, writable: true, configurable: true });

  // pin makes Math.random a generator seeded with seed (sfc32, from the
  // seed's two halves) and the clock tell the time now (ms since the
  // epoch), without advancing: a program run again with the same pin
  // and the same tool results does the same.
  function pin(seed, now) {
    let a = (seed % 4294967296) >>> 0, b = (seed / 4294967296) >>> 0, c = 0x9e3779b9, d = 1;
    const next = function () {
      const t = (((a + b) >>> 0) + d) >>> 0;
      d = (d + 1) >>> 0;
      a = b ^ (b >>> 9);
      b = (c + (c << 3)) >>> 0;
      c = (c << 21) | (c >>> 11);
      c = (c + t) >>> 0;
      return t / 4294967296;
    };
    for (let i = 0; i < 15; i++) next();
    defineProperty(g.Math, "random", { value: function random() { return next(); }, writable: true, configurable: true });
    const DateCtor = g.Date;
    const construct = Reflect.construct;
    const toString = DateCtor.prototype.toString;
    const Date = function Date() {
      if (new.target === undefined) return apply(toString, construct(DateCtor, [now]), []);
      if (arguments.length === 0) return construct(DateCtor, [now], new.target);
      return construct(DateCtor, apply(ArrayProto.slice, arguments, []), new.target);
    };
    defineProperty(Date, "prototype", { value: DateCtor.prototype });
    defineProperty(Date, "now", { value: function now_() { return now; }, writable: true, configurable: true });
    defineProperty(Date, "parse", { value: DateCtor.parse, writable: true, configurable: true });
    defineProperty(Date, "UTC", { value: DateCtor.UTC, writable: true, configurable: true });
    defineProperty(DateCtor.prototype, "constructor", { value: Date, writable: true, configurable: true });
    defineProperty(g, "Date", { value: Date, writable: true, configurable: true });
  }

  return {
    // install creates a namespace object per category, with a function per
    // tool, from {category: {name: [positional...]}}. A category without
    // tools (its source is loading or unavailable) is a namespace too:
    // its calls reach the dispatcher, which says why it has no tools.
    install: function (layoutJSON) {
      const layout = parse(layoutJSON);
      const spaces = keys(layout);
      const names = list();
      for (let i = 0; i < spaces.length; i++) {
        const ns = spaces[i];
        if (ns in g) continue; // never shadow a built-in; tools.call still works
        defineProperty(g, ns, { value: namespace(ns, layout[ns]), writable: true, configurable: true });
        names[names.length] = ns;
      }
      namespaceNames = names;
    },
    // begin sets the console limit of the job about to run, pins
    // Math.random and the clock when the host gives a seed and a time
    // (Request.Pin), and, for a
    // program run as a tool, installs its arguments (the host built them
    // from their JSON) as the global args.
    begin: function (maxLogBytes, args, seed, now) {
      logBytes = maxLogBytes;
      if (seed !== undefined) pin(seed, now);
      if (args !== undefined) {
        defineProperty(g, "args", { value: args, writable: true, configurable: true });
      }
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
    // settleCall settles a tool call's promise with its result, or rejects
    // it with a ToolError made of the rejection; the host built both from
    // their JSON. The error has no stack of its own: QuickJS gives an
    // Error without one the stack of the frame it is thrown in, which is
    // the program's, where it awaits the call. (Making an error at each
    // call's site instead would cost every call a backtrace.)
    settleCall: function (resolve, reject, ok, v) {
      if (ok) {
        apply(resolve, undefined, [v]);
        return;
      }
      const err = new ToolError(toStr(v.message), toStr(v.code), toStr(v.tool), v.problems);
      deleteProperty(err, "stack");
      apply(reject, undefined, [err]);
    },
  };
})()
