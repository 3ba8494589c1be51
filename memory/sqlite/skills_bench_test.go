package sqlite

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codecell/codecell/memory"
)

// BenchmarkListCallableSkills measures a page of skills.list over a
// publisher's 500 skills of 99 KB (memory.max_skill_code_bytes), as
// another principal lists them: µs a page and bytes allocated a page.
// Reproduce with
//
//	go test -tags sqlite_fts5 -run '^$' -bench ListCallableSkills -count 3 ./memory/sqlite/
func BenchmarkListCallableSkills(b *testing.B) {
	s := openTest(b, Config{})
	bob := as(b.Context(), "bob")
	code := "return " + strconv.Quote(strings.Repeat("x", 99_000))
	for i := range 500 {
		name := fmt.Sprintf("big_%03d", i)
		if _, err := s.SaveSkill(bob, memory.Skill{Name: name, Description: "Bob's " + name + ".", Code: code}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.PublishSkill(bob, name); err != nil {
			b.Fatal(err)
		}
	}
	alice := as(b.Context(), "alice")
	for _, limit := range []int{100, 500} {
		b.Run(fmt.Sprintf("page=%d", limit), func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				page, err := s.ListCallableSkills(alice, memory.SkillQuery{Limit: limit})
				if err != nil || len(page.Skills) != limit {
					b.Fatalf("%d skills, %v", len(page.Skills), err)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N), "µs/page")
		})
	}
}
