// teaapp is a Go bubbletea program for the prompt tests: the alternate
// screen, bubbletea's own renderer (which redraws only the lines that
// changed), keys w (write $TUI_TARGET/<n>.txt) and q. The screen shows
// only "ok" or "refused".
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	tea "github.com/charmbracelet/bubbletea"
)

type op struct {
	n  int
	ok bool
}

type model struct {
	ops []op
	n   int
}

func (m model) Init() tea.Cmd { return nil }

func (m model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	k, ok := msg.(tea.KeyMsg)
	if !ok {
		return m, nil
	}
	switch k.String() {
	case "q":
		return m, tea.Quit
	case "w":
		m.n++
		err := os.WriteFile(fmt.Sprintf("%s/%d.txt", target(), m.n), []byte("x"), 0o644)
		m.ops = append(m.ops, op{m.n, err == nil})
		if f, ferr := os.OpenFile(os.Getenv("TUI_LOG"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); ferr == nil {
			code := ""
			if err != nil {
				code = err.Error()
			}
			json.NewEncoder(f).Encode(map[string]any{"n": m.n, "what": "write", "ok": err == nil, "code": code})
			f.Close()
		}
	}
	return m, nil
}

func (m model) View() string {
	lines := []string{"APP go-bubbletea", fmt.Sprintf("%c Working… %d operations", `|/-\`[m.n%4], m.n)}
	for _, o := range m.ops {
		res := "refused"
		if o.ok {
			res = "ok"
		}
		lines = append(lines, fmt.Sprintf("  op %d: write %s", o.n, res))
	}
	lines = append(lines, "keys: w write · q quit")
	return strings.Join(lines, "\n")
}

func target() string {
	if t := os.Getenv("TUI_TARGET"); t != "" {
		return t
	}
	return "ASK"
}

func main() {
	if _, err := tea.NewProgram(model{}, tea.WithAltScreen()).Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
