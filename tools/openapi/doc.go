// Package openapi is the tool source for HTTP APIs described by an
// OpenAPI document (3.0 or 3.1, or Swagger 2.0, which it converts): each
// operation becomes a tool of the source's category, and each call an
// HTTP request.
//
// Parse reads a document (with github.com/getkin/kin-openapi); New checks
// a source's Config and reads its credentials from the environment
// variables the configuration names (MissingEnv tells a credential that is
// not set from a mistake); Source.Open fetches the document (a file, or an
// https URL cached with its ETag), makes the tools and registers them in a
// tools.Registry. With Options.SnapshotDir, what it made is kept as a
// snapshot keyed by the document's hash, the configuration and
// Options.Version, and the next Open reads that instead of parsing the
// document (snapshot.go).
//
// Tools: the name comes from the operationId, made a lower-case
// identifier (issues/list-for-repo → issues_list_for_repo; see ToolName),
// else from the method and path. The arguments merge the path, query,
// header and cookie parameters and the request body into one object (the
// body under "body" when it is not a plain object or a property would
// clash); schemas become JSON Schema 2020-12 with the document's named
// schemas as definitions shared by every tool (tools.Definitions), so that
// circular ones refer to themselves, discriminated unions stay unions and
// no tool carries a copy. The result's schema is the success
// response's. GET and HEAD are read-only, PUT and DELETE idempotent, PUT,
// PATCH and DELETE destructive. A tool's group in the tree is its first
// tag, split by resource when a tag is large (Tool.Group).
//
// Calls: parameters are written per their style and explode, bodies as
// JSON, forms or multipart; a JSON response is the result as it is, text
// a string, anything else an artifact handle {type, mimeType, uri,
// bytes} (Artifacts); a non-2xx response is a *tools.Error with code
// http_<status> whose message holds the API's error body, cut, and the
// wait the API asked for (HTTPError has them as fields). Idempotent
// calls are retried after a connection failure or a 429 or 503 with
// Retry-After, when the wait fits in the run's deadline. Requests go only
// to the base URL's host and allowed_hosts; a redirect elsewhere is
// refused. Credentials are added to each request on its way out and
// never reach a program: responses and messages have them replaced.
// Every request is reported to a Recorder (method, host, status; never
// headers or bodies). The paginate tool follows Link: rel="next" or the
// document's cursor and returns the items of every page; tools.paginate
// in a program calls it.
//
// Package openapi does not speak MCP (package mcpserver) or filter
// results (package filter): its tools pass the same gate and filter as
// every other tool's.
package openapi
