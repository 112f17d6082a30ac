// Package layout holds no code: its test checks the rules of the package
// graph docs/architecture.md states, so the layout cannot drift from the
// page.
package layout
