// Package catalog loads a tool catalogue written as JSON files and
// registers its tools and category descriptions into a *tools.Registry.
//
// A catalogue is a directory of files named <category>.json (or one such
// file). Each file describes one category:
//
//	{
//	  "category": "github",
//	  "description": "Repositories, issues, pull requests",
//	  "$defs": {"Issue": {...}},          // schemas shared by the tools below
//	  "tools": [{
//	    "name": "search_issues",          // short name; the tool is github.search_issues
//	    "summary": "...", "description": "...",
//	    "inputSchema": {...}, "outputSchema": {...},
//	    "annotations": {"readOnly": true},
//	    "positional": ["query"],
//	    "related": ["get_issue", "slack.post_message"],  // short names mean this category
//	    "examples": [{"title": "...", "args": {...}, "result": {...}}],
//	    "errors": [{"code": "not_found", "description": "..."}],
//	    "notes": "..."
//	  }]
//	}
//
// A schema may refer to the file's shared definitions as "#/$defs/Name";
// the loader copies each definition a schema needs (transitively) into that
// schema's own "$defs", so every registered schema stands alone.
//
// Catalogue tools have no backends: they are fixtures for demos,
// benchmarks and tests of discovery. Their handler is data-driven and
// honest about it. A call returns the recorded result of the first example
// whose arguments equal the call's arguments (as JSON values), or else the
// result of the first example that has one; a tool with no example result
// fails with code "no_fixture". The loader appends a note saying so to
// every tool, so an agent reading the tool's page is not misled. No result
// is made up in Go code.
//
// Package catalog does not define the tool model (package tools) or render
// it for agents (package vfs).
package catalog
