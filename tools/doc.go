// Package tools owns the tool model shared by every other codecell package:
// a Tool (qualified name, documentation, JSON Schemas, annotations, handler),
// the concurrency-safe Registry that holds the catalogue and tells
// subscribers when it changes, and argument validation against each tool's
// input schema.
//
// It does not run JavaScript (package executor), render the catalogue as a
// file tree (package vfs) or speak MCP (package mcpserver).
package tools
