package shell

import (
	"slices"
	"strings"
	"sync"
)

// Options in command rules (docs/bash-rules.md, "Options in command
// rules"). A command line is also read as its operands, in order, and
// its options, wherever they appear: `git push -q origin main` has the
// operands git push origin main and the option --quiet. A rule's words
// that start with '-' name options, its other words operands, so
// `git push origin *` meets `git push -q origin main` and
// `git push --force*` meets `git push origin main -f`.
//
// Which option takes a value, which short options cluster, which names
// are aliases of one option, and which programs accept abbreviations of
// long options is per program: the tables below. A reading made with a
// table is certain where the table covers the command; an option the
// table does not know may or may not take the next word as its value,
// and the other reading is only possible (it can only make the answer
// stricter). A program without a table is read only possibly.

// optKind says whether an option takes a value.
type optKind uint8

const (
	optFlag     optKind = iota // no value
	optValue                   // a value: the next word, after '=', or attached to a short option
	optOptional                // a value only after '=' (long) or attached (short)
)

// optSpec is one option: its names, the first canonical.
type optSpec struct {
	names []string
	kind  optKind
}

// optTable is what a program (or one of its subcommands) accepts.
type optTable struct {
	opts map[string]*optSpec // by every name: "-f", "--force"
	// long lists the long names, for abbreviations.
	long []string
	// abbrev: a long option may be written as an unambiguous prefix
	// (git's parse-options, GNU getopt_long, curl).
	abbrev bool
	// negate: --no-NAME is accepted for every long NAME (git).
	negate bool
	// clusters: short options cluster (-fq); a value option takes the
	// rest of the word as its value (-oci.skip).
	clusters bool
	// inOrder: options end at the first operand (docker run IMAGE CMD…,
	// git's options before its subcommand); otherwise they may follow
	// operands, as with GNU getopt and git's parse-options.
	inOrder bool
	// subs are the subcommands, each with its options; nil when the
	// program has none that change its options. A subcommand not listed
	// is read with no known options (possibly only).
	subs map[string]*optTable
	// stop are options after which the program runs nothing (git
	// --exec-path, --help): a line with one has no option reading.
	stop map[string]bool
	// pushRefspec: an operand +REF after the repository forces the
	// update of REF (git push), read as an option --force.
	pushRefspec bool
}

// opts builds a table from option specs: "--force|-f" is a flag with
// its names, the first canonical; a trailing "=" takes a value, a
// trailing "?" an optional one (only after '=' or attached).
func opts(specs ...string) *optTable {
	t := &optTable{opts: map[string]*optSpec{}}
	t.add(specs...)
	return t
}

func (t *optTable) add(specs ...string) *optTable {
	for _, s := range specs {
		kind := optFlag
		switch {
		case strings.HasSuffix(s, "="):
			kind, s = optValue, s[:len(s)-1]
		case strings.HasSuffix(s, "?"):
			kind, s = optOptional, s[:len(s)-1]
		}
		sp := &optSpec{names: strings.Split(s, "|"), kind: kind}
		for _, n := range sp.names {
			t.opts[n] = sp
			if strings.HasPrefix(n, "--") {
				t.long = append(t.long, n)
			}
		}
	}
	return t
}

func (t *optTable) with(f func(*optTable)) *optTable {
	f(t)
	return t
}

// gitParseOptions marks a table as read by git's parse-options.
func gitParseOptions(t *optTable) {
	t.abbrev, t.negate, t.clusters = true, true, true
}

// gnu marks a table as read by GNU getopt_long (and curl's own parser).
func gnu(t *optTable) {
	t.abbrev, t.clusters = true, true
}

// optionTables are the programs whose options are known. Add a program
// here (and to docs/bash-rules.md): its options that take a value, its
// aliases, and for a program with subcommands the options of each.
//
// The tables are built at their first use, not at start-up: every
// process of a sandboxed run is this program, and most never read a
// command line (the helper stages, a run whose policy has no command
// rules).
var optionTables = sync.OnceValue(func() map[string]*optTable {
	return map[string]*optTable{
		"git":     gitOptions(),
		"rm":      rmOptions(),
		"curl":    curlOptions(),
		"npm":     npmOptions(),
		"docker":  dockerOptions(),
		"kubectl": kubectlOptions(),
	}
})

// gitOptions are git's global options (handle_options in git.c: they
// end at the subcommand and do not cluster) and the options of its
// common subcommands (parse-options: anywhere before `--`, clusters,
// abbreviations, --no-NAME). The values are the grammar's (gitGlobals).
var gitOptions = sync.OnceValue(func() *optTable {
	t := &optTable{opts: map[string]*optSpec{}, inOrder: true}
	for n := range gitGlobals.flags {
		t.add(n)
	}
	for n := range gitGlobals.values {
		t.add(n + "=")
	}
	for n := range gitGlobals.eqOnly {
		t.add(n + "?")
	}
	t.stop = map[string]bool{}
	for n := range gitGlobals.noRun {
		t.stop[n] = true
	}
	for n := range gitGlobals.help {
		t.stop[n] = true
	}
	common := []string{"--quiet|-q", "--verbose|-v"}
	sub := func(specs ...string) *optTable {
		return opts(append(specs, common...)...).with(gitParseOptions)
	}
	push := sub("--force|-f", "--force-with-lease?", "--force-if-includes", "--repo=",
		"--all", "--branches", "--mirror", "--delete|-d", "--tags", "--follow-tags", "--dry-run|-n",
		"--porcelain", "--prune", "--set-upstream|-u", "--thin", "--receive-pack|--exec=",
		"--recurse-submodules=", "--push-option|-o=", "--signed?", "--atomic", "--progress",
		"--no-verify", "--verify", "--ipv4|-4", "--ipv6|-6")
	push.pushRefspec = true
	// --mirror force-updates every ref: it carries --force as a name
	// (not a spelling git accepts), so a rule about --force holds for it.
	push.opts["--mirror"].names = append(push.opts["--mirror"].names, "--force")
	t.subs = map[string]*optTable{
		"push": push,
		"commit": sub("--message|-m=", "--file|-F=", "--reuse-message|-C=", "--reedit-message|-c=",
			"--fixup=", "--squash=", "--author=", "--date=", "--template|-t=", "--cleanup=", "--trailer=",
			"--pathspec-from-file=", "--untracked-files|-u?", "--gpg-sign|-S?", "--all|-a", "--amend",
			"--no-verify|-n", "--verify", "--no-edit", "--edit|-e", "--signoff|-s", "--allow-empty",
			"--allow-empty-message", "--patch|-p", "--only|-o", "--include|-i", "--dry-run", "--short",
			"--porcelain", "--reset-author", "--status", "--no-status", "--null|-z"),
		"fetch": sub("--all", "--append|-a", "--atomic", "--depth=", "--deepen=", "--shallow-since=",
			"--shallow-exclude=", "--unshallow", "--dry-run", "--force|-f", "--keep|-k", "--multiple",
			"--prune|-p", "--prune-tags|-P", "--tags|-t", "--no-tags", "--jobs|-j=", "--upload-pack=",
			"--server-option|-o=", "--refmap=", "--negotiation-tip=", "--recurse-submodules?",
			"--update-head-ok|-u", "--set-upstream", "--ipv4|-4", "--ipv6|-6", "--progress", "--filter="),
		"pull": sub("--rebase|-r?", "--no-rebase", "--ff", "--no-ff", "--ff-only", "--squash", "--commit",
			"--edit|-e", "--strategy|-s=", "--strategy-option|-X=", "--all", "--append|-a", "--depth=",
			"--deepen=", "--shallow-since=", "--shallow-exclude=", "--unshallow", "--force|-f",
			"--prune|-p", "--tags|-t", "--jobs|-j=", "--upload-pack=", "--server-option|-o=",
			"--recurse-submodules?", "--autostash", "--dry-run", "--ipv4|-4", "--ipv6|-6", "--progress",
			"--gpg-sign|-S?", "--signoff", "--stat", "--no-stat|-n", "--allow-unrelated-histories"),
		"reset": sub("--hard", "--soft", "--mixed", "--merge", "--keep", "--patch|-p",
			"--intent-to-add|-N", "--pathspec-from-file=", "--recurse-submodules?", "--refresh"),
		"clean": sub("--force|-f", "-d", "-x", "-X", "--dry-run|-n", "--interactive|-i", "--exclude|-e="),
		"checkout": sub("-b=", "-B=", "--orphan=", "--force|-f", "--track|-t?", "--detach", "--patch|-p",
			"--ours|-2", "--theirs|-3", "--merge|-m", "--conflict=", "--pathspec-from-file=", "-l",
			"--guess", "--overlay", "--recurse-submodules?", "--progress", "--ignore-other-worktrees"),
		"switch": sub("--create|-c=", "--force-create|-C=", "--orphan=", "--detach|-d",
			"--force|-f|--discard-changes", "--track|-t?", "--guess", "--merge|-m", "--conflict=",
			"--recurse-submodules?", "--progress", "--ignore-other-worktrees"),
		"branch": sub("--delete|-d", "-D", "--force|-f", "--move|-m", "-M", "--copy|-c", "-C",
			"--set-upstream-to|-u=", "--unset-upstream", "--track|-t?", "--all|-a", "--remotes|-r",
			"--list|-l", "--contains?", "--no-contains?", "--merged?", "--no-merged?", "--points-at=",
			"--format=", "--sort=", "--show-current", "--edit-description", "--create-reflog",
			"--column?", "--abbrev?", "--color?", "--ignore-case|-i"),
		"rebase": sub("--interactive|-i", "--onto=", "--exec|-x=", "--strategy|-s=", "--strategy-option|-X=",
			"--root", "--continue", "--abort", "--skip", "--quit", "--edit-todo", "--force-rebase|-f",
			"--autosquash", "--autostash", "--rebase-merges|-r?", "--update-refs", "--keep-base",
			"--gpg-sign|-S?", "--signoff", "--committer-date-is-author-date", "--empty=", "--no-verify",
			"--verify", "--merge|-m", "--apply", "--fork-point", "--reapply-cherry-picks", "--stat",
			"--no-stat|-n", "-C="),
		"tag": sub("--annotate|-a", "--delete|-d", "--force|-f", "--message|-m=", "--file|-F=", "--sign|-s",
			"--local-user|-u=", "--list|-l", "--verify|-v", "-n?", "--sort=", "--contains?",
			"--no-contains?", "--merged?", "--no-merged?", "--points-at?", "--format=", "--cleanup=",
			"--create-reflog", "--column?", "--ignore-case|-i", "--edit|-e", "--trailer="),
		"add": sub("--all|-A", "--update|-u", "--force|-f", "--patch|-p", "--interactive|-i",
			"--dry-run|-n", "--intent-to-add|-N", "--chmod=", "--pathspec-from-file=", "--edit|-e",
			"--refresh", "--ignore-errors", "--ignore-missing", "--renormalize", "--sparse", "--no-all",
			"--ignore-removal"),
		"rm": sub("--force|-f", "-r", "--cached", "--dry-run|-n", "--ignore-unmatch", "--sparse",
			"--pathspec-from-file="),
		"clone": sub("--branch|-b=", "--origin|-o=", "--depth=", "--config|-c=", "--upload-pack|-u=",
			"--reference=", "--reference-if-able=", "--separate-git-dir=", "--template=", "--jobs|-j=",
			"--filter=", "--shallow-since=", "--shallow-exclude=", "--server-option=", "--bare", "--mirror",
			"--no-checkout|-n", "--local|-l", "--no-hardlinks", "--shared|-s", "--dissociate",
			"--recurse-submodules?", "--single-branch", "--no-tags", "--shallow-submodules", "--sparse",
			"--progress", "--ipv4|-4", "--ipv6|-6", "--bundle-uri=", "--ref-format=", "--revision="),
		"merge": sub("--message|-m=", "--file|-F=", "--strategy|-s=", "--strategy-option|-X=", "--ff",
			"--no-ff", "--ff-only", "--squash", "--commit", "--no-commit", "--abort", "--continue", "--quit",
			"--edit|-e", "--no-edit", "--allow-unrelated-histories", "--gpg-sign|-S?", "--signoff",
			"--autostash", "--stat", "--no-stat|-n", "--log?", "--cleanup=", "--into-name=", "--verify",
			"--no-verify", "--progress", "--rerere-autoupdate", "--overwrite-ignore"),
		"status": sub("--short|-s", "--branch|-b", "--porcelain?", "--long", "--untracked-files|-u?",
			"--ignored?", "--ignore-submodules?", "--null|-z", "--column?", "--ahead-behind",
			"--renames", "--find-renames?", "--show-stash"),
	}
	// git help SUB and git SUB --help: common subcommands people allow.
	return t
})

// rmOptions is GNU rm.
var rmOptions = sync.OnceValue(func() *optTable {
	return opts("--force|-f", "--interactive?", "-i", "-I", "--one-file-system", "--no-preserve-root",
		"--preserve-root?", "--recursive|-r|-R", "--dir|-d", "--verbose|-v", "--help", "--version").with(gnu)
})

// curlOptions is curl's options that take a value (and the common
// flags, for their aliases). A flag it does not list is read both ways.
var curlOptions = sync.OnceValue(func() *optTable {
	return opts(
		"--request|-X=", "--data|-d=", "--data-raw=", "--data-binary=", "--data-ascii=", "--data-urlencode=",
		"--json=", "--header|-H=", "--output|-o=", "--user|-u=", "--form|-F=", "--form-string=",
		"--upload-file|-T=", "--proxy|-x=", "--config|-K=", "--user-agent|-A=", "--referer|-e=",
		"--cookie|-b=", "--cookie-jar|-c=", "--write-out|-w=", "--max-time|-m=", "--range|-r=",
		"--continue-at|-C=", "--cert|-E=", "--key=", "--cacert=", "--capath=", "--speed-limit|-Y=",
		"--speed-time|-y=", "--time-cond|-z=", "--proxy-user|-U=", "--quote|-Q=", "--telnet-option|-t=",
		"--dump-header|-D=", "--connect-timeout=", "--retry=", "--retry-delay=", "--retry-max-time=",
		"--resolve=", "--connect-to=", "--interface=", "--limit-rate=", "--max-filesize=", "--max-redirs=",
		"--output-dir=", "--oauth2-bearer=", "--url=", "--unix-socket=", "--abstract-unix-socket=",
		"--trace=", "--trace-ascii=", "--stderr=", "--variable=", "--expand-url=", "--aws-sigv4=",
		"--netrc-file=", "--dns-servers=", "--doh-url=", "--noproxy=", "--preproxy=", "--proxy-header=",
		"--request-target=", "--mail-from=", "--mail-rcpt=", "--ftp-port|-P=", "--pass=", "--pinnedpubkey=",
		"--engine=", "--ciphers=", "--tls-max=", "--tlsuser=", "--tlspassword=", "--login-options=",
		"--sasl-authzid=", "--service-name=", "--socks4=", "--socks4a=", "--socks5=", "--socks5-hostname=",
		"--local-port=", "--keepalive-time=", "--happy-eyeballs-timeout-ms=", "--parallel-max=",
		"--remote-name|-O", "--remote-name-all", "--location|-L", "--location-trusted", "--silent|-s",
		"--show-error|-S", "--insecure|-k", "--fail|-f", "--fail-with-body", "--head|-I", "--include|-i",
		"--verbose|-v", "--get|-G", "--globoff|-g", "--compressed", "--netrc|-n", "--netrc-optional",
		"--progress-bar|-#", "--no-buffer|-N", "--list-only|-l", "--append|-a", "--create-dirs",
		"--remote-header-name|-J", "--junk-session-cookies|-j", "--anyauth", "--basic", "--digest",
		"--ntlm", "--negotiate", "--http1.0|-0", "--http1.1", "--http2", "--http3", "--ipv4|-4", "--ipv6|-6",
		"--tlsv1|-1", "--sslv2|-2", "--sslv3|-3", "--use-ascii|-B", "--disable|-q", "--manual|-M",
		"--help|-h?", "--version|-V", "--parallel|-Z", "--next|-:", "--proto=", "--proto-redir=",
		"--proto-default=", "--retry-all-errors", "--retry-connrefused", "--raw", "--tcp-nodelay",
		"--no-keepalive", "--path-as-is", "--ssl", "--ssl-reqd", "--no-progress-meter",
	).with(gnu)
})

// npmOptions is npm's configuration flags, which every npm command takes
// anywhere on its line (nopt: a flag npm does not know is a boolean).
var npmOptions = sync.OnceValue(func() *optTable {
	return opts(
		"--global|-g", "--save-dev|-D", "--save-exact|-E", "--save-optional|-O", "--save-prod|-P",
		"--save|-S", "--no-save", "--save-peer", "--save-bundle|-B", "--force|-f", "--yes|-y", "--no",
		"--dry-run", "--ignore-scripts", "--legacy-peer-deps", "--strict-peer-deps", "--silent|-s",
		"--quiet|-q", "--loglevel=", "--verbose", "--json", "--production", "--prefer-offline",
		"--prefer-online", "--offline", "--no-audit", "--no-fund", "--workspaces|-ws", "--include-workspace-root",
		"--registry=", "--prefix=", "--workspace|-w=", "--tag=", "--otp=", "--access=", "--omit=",
		"--include=", "--cache=", "--userconfig=", "--globalconfig=", "--scope=", "--package=",
		"--call|-c=", "--install-strategy=", "--before=", "--depth=", "--location=", "--script-shell=",
		"--auth-type=", "--provenance", "--foreground-scripts", "--if-present", "--global-style",
		"--install-links", "--package-lock-only", "--no-package-lock", "--help|-h", "--version|-v",
	)
})

// dockerOptions are the docker CLI's root options (before the
// subcommand) and those of the subcommands that run or change things.
// `docker run IMAGE CMD…` and `docker exec CONTAINER CMD…` stop reading
// options at the first operand: what follows is the container's command.
var dockerOptions = sync.OnceValue(func() *optTable {
	t := opts("--debug|-D", "--tls", "--tlsverify", "--config=", "--context|-c=", "--host|-H=",
		"--log-level|-l=", "--tlscacert=", "--tlscert=", "--tlskey=")
	t.inOrder, t.clusters = true, true
	t.stop = wordSet("-v", "--version", "-h", "--help")
	runLike := []string{"--env|-e=", "--env-file=", "--volume|-v=", "--mount=", "--publish|-p=", "--name=",
		"--workdir|-w=", "--user|-u=", "--network|--net=", "--entrypoint=", "--label|-l=", "--hostname|-h=",
		"--cap-add=", "--cap-drop=", "--device=", "--security-opt=", "--add-host=", "--dns=", "--memory|-m=",
		"--cpus=", "--restart=", "--platform=", "--pull=", "--gpus=", "--ulimit=", "--tmpfs=", "--shm-size=",
		"--pid=", "--ipc=", "--uts=", "--userns=", "--cgroupns=", "--log-driver=", "--log-opt=",
		"--volumes-from=", "--link=", "--expose=", "--attach|-a=", "--detach-keys=", "--cidfile=",
		"--runtime=", "--stop-signal=", "--stop-timeout=", "--health-cmd=", "--sysctl=", "--group-add=",
		"--privileged", "--rm", "--detach|-d", "--interactive|-i", "--tty|-t", "--init", "--read-only",
		"--publish-all|-P", "--quiet|-q", "--sig-proxy", "--no-healthcheck", "--oom-kill-disable"}
	run := opts(runLike...).with(func(t *optTable) { t.inOrder, t.clusters = true, true })
	exec := opts("--env|-e=", "--env-file=", "--user|-u=", "--workdir|-w=", "--detach-keys=", "--privileged",
		"--detach|-d", "--interactive|-i", "--tty|-t").with(func(t *optTable) { t.inOrder, t.clusters = true, true })
	cobra := func(specs ...string) *optTable { return opts(specs...).with(func(t *optTable) { t.clusters = true }) }
	t.subs = map[string]*optTable{
		"run": run, "create": run, "exec": exec,
		"build": cobra("--tag|-t=", "--file|-f=", "--build-arg=", "--target=", "--platform=", "--label=",
			"--network=", "--secret=", "--ssh=", "--cache-from=", "--cache-to=", "--output|-o=", "--progress=",
			"--add-host=", "--iidfile=", "--no-cache", "--pull", "--quiet|-q", "--rm", "--force-rm", "--load",
			"--push", "--builder="),
		"push":   cobra("--all-tags|-a", "--quiet|-q", "--platform=", "--disable-content-trust"),
		"pull":   cobra("--all-tags|-a", "--quiet|-q", "--platform=", "--disable-content-trust"),
		"rm":     cobra("--force|-f", "--link|-l", "--volumes|-v"),
		"rmi":    cobra("--force|-f", "--no-prune"),
		"login":  cobra("--username|-u=", "--password|-p=", "--password-stdin"),
		"ps":     cobra("--all|-a", "--filter|-f=", "--format=", "--last|-n=", "--latest|-l", "--no-trunc", "--quiet|-q", "--size|-s"),
		"images": cobra("--all|-a", "--filter|-f=", "--format=", "--digests", "--no-trunc", "--quiet|-q"),
		"stop":   cobra("--time|-t=", "--signal|-s="),
		"kill":   cobra("--signal|-s="),
		"logs":   cobra("--follow|-f", "--since=", "--until=", "--tail|-n=", "--timestamps|-t", "--details"),
	}
	return t
})

// kubectlOptions are kubectl's global flags, which cobra takes anywhere,
// and the flags of its subcommands that take a value (one table: most are
// shared by many subcommands).
var kubectlOptions = sync.OnceValue(func() *optTable {
	return opts(
		"--namespace|-n=", "--context=", "--cluster=", "--kubeconfig=", "--user=", "--server|-s=", "--token=",
		"--as=", "--as-group=", "--as-uid=", "--cache-dir=", "--certificate-authority=", "--client-certificate=",
		"--client-key=", "--request-timeout=", "--tls-server-name=", "--v|-v=", "--username=", "--password=",
		"--profile=", "--profile-output=", "--vmodule=", "--log-flush-frequency=", "--insecure-skip-tls-verify",
		"--match-server-version", "--warnings-as-errors", "--disable-compression",
		"--filename|-f=", "--selector|-l=", "--output|-o=", "--container|-c=", "--field-selector=",
		"--grace-period=", "--timeout=", "--replicas=", "--image=", "--port=", "--type=", "--labels=",
		"--overrides=", "--patch|-p=", "--kustomize|-k=", "--template=", "--sort-by=", "--since=",
		"--tail=", "--dry-run?", "--field-manager=", "--prune-allowlist=", "--chunk-size=", "--subresource=",
		"--all-namespaces|-A", "--all", "--force", "--recursive|-R", "--wait", "--watch|-w", "--follow",
		"--stdin|-i", "--tty|-t", "--quiet|-q", "--server-side", "--overwrite", "--prune", "--now",
		"--ignore-not-found", "--cascade?", "--validate?", "--show-labels", "--previous|-p",
	).with(func(t *optTable) { t.clusters = true })
})

// Command is a command line read as its operands and its options.
type Command struct {
	Operands []string
	Options  []Option
}

// Option is one option of a command: the names it is known by (the
// first canonical, then aliases and the spelling as written), and its
// value when it has one.
type Option struct {
	Names    []string
	Value    string
	HasValue bool
	// From is set for an option the command implies without writing it
	// (a git push refspec +REF is --force): the word that implies it.
	From string
}

// maxOptionForks bounds the options read two ways in one line (2^3
// readings); further unknown options are read as flags only.
const maxOptionForks = 3

// maxOptionReadings bounds the option readings of one command.
const maxOptionReadings = 24

// optionReading is one reading of a line as a Command.
type optionReading struct {
	cmd     Command
	certain bool
}

// readOptions reads a line (its first word the program as spelled) as
// operands and options: each way it can be read, certain or not. A
// program without a table gives only possible readings; a word only
// known at run time that may become several words makes every reading
// possible. nil when there is nothing to read.
func readOptions(line []field) []optionReading {
	if len(line) == 0 {
		return nil
	}
	for _, f := range line {
		if strings.IndexByte(f.s, 0) >= 0 {
			return nil // cannot be encoded; the line as written stands
		}
	}
	t := optionTables()[BaseName(line[0].s)]
	if line[0].dyn != static {
		t = nil
	}
	p := &optParse{line: line}
	st := optState{table: t, certain: t != nil}
	st.operands = append(make([]string, 0, len(line)), line[0].s)
	p.walk(1, st)
	return p.out
}

type optParse struct {
	line []field
	out  []optionReading
}

// optState is the state of one reading as it is walked.
type optState struct {
	table    *optTable
	sub      *optTable // the subcommand's table once chosen
	subIndex int       // the index among operands of the subcommand, 0 before
	ended    bool      // past `--`, or past the first operand of an in-order table
	forks    int
	certain  bool
	operands []string
	opts     []Option
}

func (s optState) clone() optState {
	s.operands = append([]string(nil), s.operands...)
	s.opts = append([]Option(nil), s.opts...)
	return s
}

// current is the table options are looked up in, or nil when none is
// known.
func (s *optState) current() *optTable {
	if s.sub != nil {
		return s.sub
	}
	return s.table
}

func (p *optParse) walk(i int, st optState) {
	line := p.line
	for ; i < len(line); i++ {
		if len(p.out) >= maxOptionReadings {
			return
		}
		f := line[i]
		if f.dyn == dynSplit {
			st.certain = false
		}
		w := f.s
		if f.dyn != static || st.ended || len(w) < 2 || w[0] != '-' {
			p.operand(&st, f)
			continue
		}
		if w == "--" {
			st.ended = true
			continue
		}
		t := st.current()
		if t != nil && (t.stop[w] || strings.HasPrefix(w, "--list-cmds=") && t == gitOptions()) {
			return // prints and exits: the line as written stands
		}
		if t == nil {
			// No table: an option, and maybe its value.
			opt := Option{Names: unknownNames(w)}
			if name, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "--") {
				opt = Option{Names: []string{name}, Value: v, HasValue: true}
			}
			if !p.fork(i, &st, opt) {
				st.opts = append(st.opts, opt)
			} else {
				return
			}
			continue
		}
		if strings.HasPrefix(w, "--") {
			n, ok := p.long(i, &st, t)
			if !ok {
				return
			}
			i += n
			continue
		}
		n, ok := p.short(i, &st, t)
		if !ok {
			return
		}
		i += n
	}
	p.out = append(p.out, optionReading{cmd: Command{Operands: st.operands, Options: st.opts}, certain: st.certain})
}

// unknownNames are the names of an option no table describes: as
// written, and for a short cluster each letter (-rf is -r and -f to
// most programs).
func unknownNames(w string) []string {
	names := []string{w}
	if len(w) > 2 && w[1] != '-' && !strings.ContainsAny(w, "=/") {
		for j := 1; j < len(w); j++ {
			names = append(names, "-"+w[j:j+1])
		}
	}
	return names
}

// fork reads the option at line[i] both ways when the next word may be
// its value: it walks both readings itself and reports true, or reports
// false when only the flag reading applies (the caller goes on). The
// reading with the value is possible only.
func (p *optParse) fork(i int, st *optState, opt Option) bool {
	if opt.HasValue || i+1 >= len(p.line) || st.forks >= maxOptionForks {
		return false
	}
	st.forks++
	a := st.clone()
	a.opts = append(a.opts, opt)
	p.walk(i+1, a)
	b := st.clone()
	b.certain = false
	opt.Value, opt.HasValue = p.line[i+1].s, true
	b.opts = append(b.opts, opt)
	p.walk(i+2, b)
	return true
}

// operand adds a non-option word, choosing the subcommand's table.
func (p *optParse) operand(st *optState, f field) {
	st.operands = append(st.operands, f.s)
	t := st.current()
	if st.sub == nil && st.table != nil && st.table.subs != nil && st.subIndex == 0 {
		st.subIndex = len(st.operands) - 1
		if f.dyn == static {
			if sub := st.table.subs[f.s]; sub != nil {
				st.sub = sub
				st.ended = false
				return
			}
		}
		// A subcommand without a table: its options are not known.
		st.sub, st.table, st.certain = nil, nil, false
		st.ended = false
		return
	}
	if t != nil && t.pushRefspec && f.dyn == static && len(st.operands)-st.subIndex > 2 && strings.HasPrefix(f.s, "+") {
		st.opts = append(st.opts, Option{Names: []string{"--force"}, From: f.s})
	}
	if t != nil && t.inOrder {
		st.ended = true
	}
}

// long reads a long option at line[i]: how many further words it
// took, and false when it forked (the readings are walked already).
func (p *optParse) long(i int, st *optState, t *optTable) (int, bool) {
	w := p.line[i].s
	name, v, hasEq := strings.Cut(w, "=")
	var names []string
	kind := optFlag
	if sp := t.opts[name]; sp != nil {
		names, kind = sp.names, sp.kind
	} else if rest, ok := strings.CutPrefix(name, "--no-"); ok && t.negate && t.opts["--"+rest] != nil {
		names = []string{name}
	} else if t.abbrev && len(name) > 2 {
		for _, sp := range abbreviations(t, name) {
			names = append(names, sp.names...)
			kind = max(kind, sp.kind)
		}
		if rest, ok := strings.CutPrefix(name, "--no-"); ok && t.negate {
			for _, sp := range abbreviations(t, "--"+rest) {
				for _, n := range sp.names {
					if strings.HasPrefix(n, "--") {
						names = append(names, "--no-"+n[2:])
					}
				}
			}
		}
	}
	if names == nil {
		opt := Option{Names: []string{name}}
		if hasEq {
			opt.Value, opt.HasValue = v, true
		}
		if p.fork(i, st, opt) {
			return 0, false
		}
		st.opts = append(st.opts, opt)
		return 0, true
	}
	opt := Option{Names: withName(names, name)}
	switch {
	case hasEq:
		opt.Value, opt.HasValue = v, true
	case kind == optValue && i+1 < len(p.line):
		opt.Value, opt.HasValue = p.line[i+1].s, true
		st.opts = append(st.opts, opt)
		return 1, true
	}
	st.opts = append(st.opts, opt)
	return 0, true
}

// abbreviations are the long options of t that name abbreviates. git
// and getopt refuse an ambiguous abbreviation, so every candidate is a
// name it may be read as.
func abbreviations(t *optTable, name string) []*optSpec {
	var out []*optSpec
	for _, l := range t.long {
		sp := t.opts[l]
		if strings.HasPrefix(l, name) && !slices.Contains(out, sp) {
			out = append(out, sp)
		}
	}
	return out
}

// short reads a short option or cluster at line[i], as long does.
func (p *optParse) short(i int, st *optState, t *optTable) (int, bool) {
	w := p.line[i].s
	if !t.clusters || len(w) == 2 {
		name, v, hasEq := w, "", false
		sp := t.opts[w]
		if n, val, ok := strings.Cut(w, "="); sp == nil && ok && t.opts[n] != nil {
			sp, name, v, hasEq = t.opts[n], n, val, true
		}
		if sp == nil {
			opt := Option{Names: []string{w}}
			if p.fork(i, st, opt) {
				return 0, false
			}
			st.opts = append(st.opts, opt)
			return 0, true
		}
		opt := Option{Names: withName(sp.names, name)}
		switch {
		case hasEq:
			opt.Value, opt.HasValue = v, true
		case sp.kind == optValue && i+1 < len(p.line):
			opt.Value, opt.HasValue = p.line[i+1].s, true
			st.opts = append(st.opts, opt)
			if t == gitOptions() && name == "-c" && p.line[i+1].dyn == static && gitConfigForces(opt.Value) {
				st.opts = append(st.opts, Option{Names: []string{"--force"}, From: "-c " + opt.Value})
			}
			return 1, true
		}
		st.opts = append(st.opts, opt)
		return 0, true
	}
	for j := 1; j < len(w); j++ {
		name := "-" + w[j:j+1]
		sp := t.opts[name]
		if sp == nil {
			// An option the table does not know: git and getopt refuse
			// it. Read as a flag (the rest of the cluster stays options,
			// the stricter reading).
			st.opts = append(st.opts, Option{Names: []string{name}})
			continue
		}
		opt := Option{Names: withName(sp.names, name)}
		if sp.kind == optFlag {
			st.opts = append(st.opts, opt)
			continue
		}
		switch {
		case j+1 < len(w):
			opt.Value, opt.HasValue = strings.TrimPrefix(w[j+1:], "="), true
		case sp.kind == optValue && i+1 < len(p.line):
			opt.Value, opt.HasValue = p.line[i+1].s, true
			st.opts = append(st.opts, opt)
			return 1, true
		}
		st.opts = append(st.opts, opt)
		return 0, true
	}
	return 0, true
}

// gitConfigForces reports whether a `git -c KEY=VALUE` makes a push
// force its updates: a push refspec with a leading + for a remote
// (remote.NAME.push=+REF), or a remote that mirrors (remote.NAME.mirror).
func gitConfigForces(kv string) bool {
	k, v, hasEq := strings.Cut(kv, "=")
	k = strings.ToLower(k)
	if !strings.HasPrefix(k, "remote.") {
		return false
	}
	switch {
	case strings.HasSuffix(k, ".push"):
		return strings.HasPrefix(v, "+")
	case strings.HasSuffix(k, ".mirror"):
		switch strings.ToLower(v) {
		case "false", "no", "off", "0":
			return false
		}
		return hasEq || v == ""
	}
	return false
}

func withName(names []string, n string) []string {
	if slices.Contains(names, n) {
		return names
	}
	return append(append([]string(nil), names...), n)
}
