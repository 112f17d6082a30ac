package shell

import "testing"

// typicalCommand is the size and shape of what coding agents run: about
// 200 characters, a cd, a chain, a quoted message, a pipe, a redirect.
const typicalCommand = `cd /home/dev/project && git add -A && git commit -m "fix: handle empty config files in the loader" && go test ./internal/... -run TestLoader -count=1 2>&1 | tail -n 40 > /tmp/test.log`

func BenchmarkAnalyzeTypical(b *testing.B) {
	argv := []string{"/bin/bash", "-c", typicalCommand}
	b.SetBytes(int64(len(typicalCommand)))
	b.ReportAllocs()
	for b.Loop() {
		a := analyzeArgv(argv)
		if len(a.Units) != 6 {
			b.Fatalf("got %d units", len(a.Units))
		}
	}
}

func BenchmarkRenderArgv(b *testing.B) {
	argv := []string{"git", "commit", "-m", "fix: handle empty config", "--author=A <a@b>"}
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderArgv(argv)
	}
}

func BenchmarkSuggestBashPattern(b *testing.B) {
	argv := []string{"docker", "compose", "up", "-d"}
	b.ReportAllocs()
	for b.Loop() {
		_ = SuggestBashPattern(argv)
	}
}
