// Command gostdcmp runs and compares the Go standard library's test
// binaries for scripts/gostd, which runs each package's binary twice —
// bare and under permwrap — and reports the tests whose results differ.
//
//	gostdcmp run -pkg PKG -o FILE [-stall DUR] [-timeout DUR] [-resume N] -- CMD [ARG...]
//	gostdcmp compare -dir DIR [-known FILE] [-lines N] [-uid UID] PKG...
//	gostdcmp rerun -dir DIR PKG
//	gostdcmp seconds DURATION
//
// run starts CMD (a test binary run with -test.v=test2json, or permwrap
// running one), its output and errors merged, through `go tool
// test2json -t -p PKG`, and writes the events to FILE. It watches them:
// when tests are running and none has started or ended for the -stall
// duration, or the whole part has run for -timeout plus a minute, it
// says so in the stream (naming the tests that were running) and sends
// CMD SIGQUIT, then SIGKILL. When a part stops before the binary's own
// final PASS or FAIL — a stall, the binary's -test.timeout panic, a
// crash — and tests were running, it runs CMD again (up to -resume
// times) with -test.skip naming their top-level tests appended, so that
// one hang or crash costs one test, not the rest of the package. Its own
// lines in the stream are output events of no test, beginning "gostd: ".
//
// compare reads DIR/SLUG.bare.json and DIR/SLUG.permwrap.json for each
// package (SLUG: the path with '/' as '_') and prints the number of tests
// and subtests by result in each run, then every test whose result
// differs, with the first lines of its output in the run that did worse,
// whether the known list expects it (FILE: lines "package TestName
// reason", TestName a path.Match pattern, '#' comments), and the known
// entries of the packages compared that matched nothing (stale; a reason
// beginning "[root]" or "[non-root]" marks an entry expected only when
// the tests ran as that, -uid saying which). When
// DIR/SLUG.MODE.rerun.json exist (scripts/gostd runs the differing tests
// again, in both modes), a difference the re-run does not give again,
// result for result, is listed apart, as not reproduced. The exit status is 0 when every
// reproduced difference is in the known list, 1 when one is not, 2 when
// the logs cannot be read.
//
// rerun prints the -test.run pattern of the package's differing
// top-level tests (nothing when there are none), leaving out those that
// hung: a hang costs a -stall each time it is run.
//
// A test's result is pass, fail or skip as the testing package reports
// it; timeout when it was running at a stall or at the binary's
// -test.timeout panic; incomplete when it was running when the binary
// stopped otherwise (a crash); notrun when the other run reported it and
// this one never did. With -test.count above 1 a test has several
// results, shown together ("fail 1, pass 2") when they are not all the
// same. A parent whose difference comes with a differing subtest, and
// tests never run because the binary stopped at a hang or crash, need no
// known entry of their own. A binary that stops or fails with no test to
// blame is a difference of the package itself, "(package)".
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "run":
		os.Exit(runMain(args))
	case "compare":
		os.Exit(compareMain(args))
	case "rerun":
		os.Exit(rerunMain(args))
	case "seconds":
		if len(args) != 1 {
			usage()
		}
		d, err := time.ParseDuration(args[0])
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "gostdcmp: %q is not a positive duration such as 5m\n", args[0])
			os.Exit(2)
		}
		fmt.Println(int64((d + time.Second - 1) / time.Second))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprint(os.Stderr, `usage:
  gostdcmp run -pkg PKG -o FILE [-stall DUR] [-timeout DUR] [-resume N] -- CMD [ARG...]
  gostdcmp compare -dir DIR [-known FILE] [-lines N] [-uid UID] PKG...
  gostdcmp rerun -dir DIR PKG
  gostdcmp seconds DURATION
`)
	os.Exit(2)
}
