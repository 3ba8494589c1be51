// Package tools owns the tool model shared by every other codecell package:
// a Tool (qualified name, documentation, JSON Schemas, annotations, handler),
// the concurrency-safe Registry that holds the catalogue and tells
// subscribers when it changes, and argument validation against each tool's
// input schema.
//
// Tools are global or belong to a principal's scope (a principal's own
// skills), and a toolset function may hide tools from a caller. A View is
// the catalogue as one caller sees it; file trees, search indexes and
// program namespaces are built from views, and Registry.Call resolves
// names through the caller in its context, so a tool outside a caller's
// view does not exist for it at any level.
//
// A tool's input schema is compiled at its first call, once per distinct
// schema, within bounds (MaxSchemaDepth, MaxDocumentSchemas, MaxSchemas)
// and without following a reference out of its document; one that cannot
// be compiled makes that tool unavailable with the reason. Definitions
// hold the named schemas that many tools of a source share, compiled once
// for all of them.
//
// Handle is the one way to write a typed handler; EstimateTokens the one
// estimate of what text costs a context window.
//
// It does not run JavaScript (package executor), render the catalogue as a
// file tree (package vfs) or speak MCP (package mcpserver). It imports no
// other codecell package.
package tools
