package main

import "github.com/codecell/codecell/mcpserver"

// This file reads the [search] section: how search_tools ranks.
//
//	[search]
//	learn = true   # learning from use: a search followed by a run that calls
//	               # tools ranks those tools higher for those words later
//
// What learning kept is forgotten with `codecell memory reset-learning`.

// SearchConfig holds the [search] section.
type SearchConfig struct {
	// Learn turns learning from use on (the default) or off: searches
	// followed, in the same session, by runs that call tools link the
	// query's words to those tools, in the store, for the installation.
	// Words and tool names only.
	Learn bool `toml:"learn"`
}

// defaultSearch is the [search] section's defaults.
func defaultSearch() SearchConfig { return SearchConfig{Learn: true} }

// learnServer is learning from use as the MCP server takes it.
func (c *Config) learnServer() mcpserver.LearnConfig {
	return mcpserver.LearnConfig{Disabled: !c.Search.Learn}
}
