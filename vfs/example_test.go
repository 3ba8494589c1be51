package vfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/codecell/codecell/tools"
	"github.com/codecell/codecell/vfs"
)

func Example() {
	reg := tools.NewRegistry()
	_ = reg.DescribeCategory("weather", "Forecasts and conditions")
	_ = reg.Register(tools.Tool{
		Name:         "weather.current",
		Summary:      "Current weather at a place.",
		InputSchema:  json.RawMessage(`{"type":"object","properties":{"place":{"type":"string","description":"City name."}},"required":["place"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"temp_c":{"type":"number"}},"required":["temp_c"]}`),
		Annotations:  tools.Annotations{ReadOnly: true},
		Positional:   []string{"place"},
		Handler: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`{"temp_c":18}`), nil
		},
	})
	fsys := vfs.New(reg)

	// Level 0, read as an agent writes the path.
	n, _ := fsys.Read("/manifest.json")
	fmt.Printf("%s", n.Content)

	// Level 2.
	n, _ = fsys.Read("weather/current.d.ts")
	fmt.Printf("%s", n.Content)

	// A typo: the nearest parent and a suggestion.
	_, err := fsys.Read("weather/curent.d.ts")
	var nf *vfs.NotFoundError
	if errors.As(err, &nf) {
		fmt.Println(nf.Parent, "→", nf.Suggestion)
	}

	// What a search hit reports about the tool.
	info, _ := fsys.Info("weather.current")
	fmt.Println(info.Output, info.Signature.Bytes, "bytes")
	// Output:
	// {"total":1,"categories":{"weather":"1 tool: Forecasts and conditions"},"runtime":"plan, progress, tasks, tools: runtime/index.json","next":"Read <category>/index.json for its tools, <category>/<tool>.d.ts for a signature, <category>/<tool>.md for full docs. Call in code: await <category>.<tool>(args)."}
	// declare namespace weather {
	//   /**
	//    * Current weather at a place.
	//    * Read-only.
	//    */
	//   function current(args: CurrentArgs): Promise<CurrentResult>;
	//   function current(place: string): Promise<CurrentResult>;
	//   interface CurrentArgs {
	//     /** City name. */
	//     place: string;
	//   }
	//   interface CurrentResult {
	//     temp_c: number;
	//   }
	// }
	// weather → weather/current.d.ts
	// {temp_c: number} 336 bytes
}
