package supervisor_test

// The attack suite (issue 4): every program in testdata/attacks tries one
// way past a read-, write- and exec-denying policy. Each attack is run
// twice, each time in a fresh workspace:
//
//   - bare, where the workspace is just files: the attack MUST work, so an
//     attack that is broken (or a kernel that cannot do it) can never make
//     the permwrap half pass by accident;
//   - under permwrap with attackPolicy: the attack MUST be blocked.
//
// Success is judged from the outside — the secret's token appearing in
// the output, the protected trees changing on disk, the forbidden
// program's marker file appearing — never from what the program says
// about itself.

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/permwrap/permwrap/internal/kerneltest"
)

// attackPolicy is the policy under attack: read of secret/, of any .env
// and of ~/.ssh, and of what in keys/ looks secret (a content rule); write of secret/, protected/, area/conf.d/ (area/ itself
// is not guarded) and any .git/hooks; exec of
// forbidden/ and of anything named denied-tool are denied, and `git push`
// asks (denied: no terminal). Everything else is allowed, so every denial
// the suite sees comes from these rules.
const attackPolicy = `{
  "extends": "none",
  "permission": {
    "*": "allow",
    "read":  { "*": "allow", "${WORKSPACE}/secret/**": "deny", ".env": "deny", "~/.ssh/**": "deny", "${WORKSPACE}/keys/**": {"action": "deny", "content": "secret"} },
    "write": { "*": "allow", "${WORKSPACE}/secret/**": "deny", "${WORKSPACE}/protected/**": "deny", "**/.git/hooks/**": "deny", "${WORKSPACE}/area/conf.d/**": "deny" },
    "exec":  { "*": "allow", "${WORKSPACE}/forbidden/**": "deny", "denied-tool": "deny" },
    "bash":  { "*": "allow", "git push *": "ask" },
    "net":   { "*": "allow", "<outside>": "ask" }
  }
}`

// effect is a way an attack can get past the policy, as seen from outside.
type effect uint8

const (
	leaksSecret   effect = 1 << iota // the secret's token appears in the output
	changesDenied                    // secret/, protected/ or a .git/hooks differ from how they were set up
	runsForbidden                    // forbidden/prog ran (its marker file exists)
	pushes                           // the local remote's main branch moved (a `git push` ran)
	changesVictim                    // a process outside the tree had its limits or priority changed
)

func (e effect) String() string {
	var parts []string
	for _, x := range []struct {
		e    effect
		name string
	}{{leaksSecret, "leaked the secret"}, {changesDenied, "changed a denied tree"}, {runsForbidden, "ran the forbidden program"},
		{pushes, "pushed"}, {changesVictim, "changed a process outside the sandbox"}} {
		if e&x.e != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

type attack struct {
	name    string // program testdata/attacks/NAME.c and subtest name
	effects effect // what the attack achieves bare (all of them are required)
	// args returns extra arguments, computed from the fresh workspace.
	args func(t *testing.T, s *sandbox) []string
	// impossible says why the kernel under test cannot do the attack at
	// all, even bare ("" when it can). Only a reason a trial established
	// belongs here; the bare half is then not required to work, the
	// permwrap half still runs and must let nothing through, and the test
	// is reported skipped (kerneltest.Impossible): nothing was shown.
	impossible func(t *testing.T) string
	// unavailable says why the bare half cannot work here although the
	// attack is possible in principle (a sysctl, say): the test skips,
	// and fails under PERMWRAP_REQUIRE_KERNEL=1.
	unavailable func() string
	// sigsys: under permwrap the process must be killed by SIGSYS.
	sigsys bool
	// The allowed twin: the program first aims the same technique at
	// an allowed file. Its result must show in both runs, so a technique
	// that permwrap breaks for everyone (a false denial) cannot pass as
	// a block. controlFile must exist afterwards; controlOut is how many
	// times free/a's content must be printed.
	controlFile string
	controlOut  int
	// wantStderr must appear in the program's stderr under permwrap (the
	// errno a side door must fail with, where the issue fixes it).
	wantStderr string
	// git sets up gitwork/, a clone with an unpushed commit of the bare
	// repository remote.git (the `pushes` effect).
	git bool
	// victim starts a process outside the tree and passes its pid as the
	// first argument (the `changesVictim` effect).
	victim bool
	// prepare adds to the workspace what the attack needs but should not
	// have to create itself.
	prepare func(t *testing.T, s *sandbox)
	// outside starts services outside the tree that hand the secret's
	// token to whoever connects, and passes their addresses as the first
	// arguments (outsideServices).
	outside bool
}

var attacks = []attack{
	// Reads of the secret.
	{name: "read_direct", effects: leaksSecret},
	{name: "read_dirfd", effects: leaksSecret, controlOut: 1},
	{name: "read_cwd", effects: leaksSecret},
	{name: "read_fchdir_opath", effects: leaksSecret},
	{name: "read_dotdot", effects: leaksSecret},
	{name: "read_symlink_file", effects: leaksSecret},
	{name: "read_symlink_dir", effects: leaksSecret},
	{name: "read_symlink_proc", effects: leaksSecret, controlOut: 2},
	{name: "read_hardlink", effects: leaksSecret | changesDenied}, // the link count of secret/key changes
	{name: "read_rename_out", effects: leaksSecret | changesDenied},
	// Private keys by what the bytes are (issue 28): keys/ is denied
	// only where the content looks secret; keys/ca.pem stays readable.
	{name: "read_key_text_dump", effects: leaksSecret, controlFile: "twin-ok", prepare: prepareKeys},
	{name: "read_key_encoded", effects: leaksSecret, controlFile: "twin-ok", prepare: prepareKeys},
	{name: "read_rename_parent", effects: leaksSecret | changesDenied},
	{name: "read_exchange", effects: leaksSecret | changesDenied},
	{name: "read_openat2", effects: leaksSecret, controlOut: 2},
	{name: "read_proc_self_fd", effects: leaksSecret, controlOut: 1},
	{name: "read_proc_self_root", effects: leaksSecret, controlOut: 3},
	{name: "read_proc_pid_cwd", effects: leaksSecret},
	{name: "read_opath_reopen", effects: leaksSecret, controlOut: 1},
	{name: "read_linkat_empty_path", effects: leaksSecret | changesDenied},
	{name: "read_open_by_handle", effects: leaksSecret, args: fileHandleArg},
	{name: "read_io_uring", effects: leaksSecret, impossible: ioUringImpossible, unavailable: ioUringUnavailable},
	{name: "read_race_path_flip", effects: leaksSecret},
	{name: "read_race_symlink_swap", effects: leaksSecret},
	{name: "read_race_dir_swap", effects: leaksSecret},
	{name: "read_race_cwd_flip", effects: leaksSecret},
	{name: "read_race_dirfd_flip", effects: leaksSecret},
	{name: "read_race_vm_writev", effects: leaksSecret},
	{name: "read_race_ptrace_poke", effects: leaksSecret},
	// ptrace is allowed in the sandbox (gdb, strace): a tracer rewriting
	// a tracee's registers or memory after a check gets nothing.
	{name: "read_ptrace_setregs", effects: leaksSecret, controlOut: 2},
	{name: "read_ptrace_suspend_seccomp", effects: leaksSecret, controlOut: 1, unavailable: notRoot,
		wantStderr: "PTRACE_O_SUSPEND_SECCOMP: Operation not permitted"},
	{name: "read_race_proc_mem", effects: leaksSecret},
	{name: "read_nested_listener", effects: leaksSecret, wantStderr: "NEW_LISTENER): Operation not permitted"},
	{name: "read_int80", effects: leaksSecret, impossible: ia32Impossible, sigsys: true},
	{name: "read_x32", effects: leaksSecret, impossible: x32Impossible},
	{name: "read_userns_bind", effects: leaksSecret},
	{name: "read_userns_open_tree", effects: leaksSecret},
	{name: "read_userns_chroot", effects: leaksSecret},
	{name: "read_deleted_opath", effects: leaksSecret, controlOut: 1},
	{name: "read_ssh_parent", effects: leaksSecret, controlOut: 1},
	{name: "read_fanotify", effects: leaksSecret, unavailable: needsCap("CAP_SYS_ADMIN", 21)},
	// Listings (read-only O_DIRECTORY opens) are answered in BPF under
	// the attack policy ("listings" is "free" by default): the listing of
	// the denied directory succeeds (wantStderr), and every use of the fd
	// must still be judged (docs/kernel.md).
	{name: "read_listing_dirfd", effects: leaksSecret, controlOut: 1, wantStderr: "open secret O_DIRECTORY: ok"},
	{name: "read_listing_ssh", effects: leaksSecret, controlOut: 1, wantStderr: "open ~/.ssh O_DIRECTORY: ok"},
	{name: "read_listing_fchdir", effects: leaksSecret, controlOut: 1, wantStderr: "attack: secret: ok"},
	{name: "read_listing_linkat", effects: leaksSecret | changesDenied, wantStderr: "open secret O_DIRECTORY: ok"},
	{name: "read_listing_rename", effects: leaksSecret | changesDenied, wantStderr: "open secret O_DIRECTORY: ok"},
	{name: "read_listing_not_a_dir", effects: leaksSecret, impossible: listingNotADirImpossible},

	// Writes under protected/.
	{name: "write_direct", effects: changesDenied},
	{name: "write_dirfd", effects: changesDenied},
	{name: "write_cwd", effects: changesDenied},
	{name: "write_dotdot", effects: changesDenied},
	{name: "write_symlink_file", effects: changesDenied},
	{name: "write_symlink_dir", effects: changesDenied},
	{name: "write_symlink_above_guard", effects: changesDenied, controlFile: "free/t/ok"},
	{name: "write_dangling_symlink", effects: changesDenied},
	{name: "write_via_symlink_dir", effects: changesDenied},
	{name: "write_via_symlink_file", effects: changesDenied},
	{name: "write_proc_self_fd", effects: changesDenied},
	{name: "write_hardlink", effects: changesDenied},
	{name: "write_linkat_empty_path", effects: changesDenied},
	{name: "write_opath_reopen", effects: changesDenied},
	{name: "write_rename_in", effects: changesDenied},
	{name: "write_rename_out", effects: changesDenied},
	{name: "write_exchange", effects: changesDenied},
	{name: "write_whiteout", effects: changesDenied},
	{name: "write_rename_parent", effects: changesDenied},
	{name: "write_unlink", effects: changesDenied},
	{name: "write_truncate", effects: changesDenied},
	{name: "write_rdonly_trunc", effects: changesDenied},
	{name: "write_openat2", effects: changesDenied},
	{name: "write_create", effects: changesDenied},
	{name: "write_mkdir_symlink", effects: changesDenied},
	{name: "write_link_in", effects: changesDenied},
	{name: "write_mknod", effects: changesDenied},
	{name: "write_bind_socket", effects: changesDenied},
	{name: "write_chmod", effects: changesDenied},
	{name: "write_chown", effects: changesDenied},
	{name: "write_utimes", effects: changesDenied},
	{name: "write_xattr", effects: changesDenied, unavailable: userXattrUnavailable},
	{name: "write_new_syscalls", effects: changesDenied},
	{name: "write_ioctl_setflags", effects: changesDenied},
	{name: "write_tmpfile_linkat", effects: changesDenied, controlFile: "free/tmpctl"},
	{name: "write_io_uring", effects: changesDenied, impossible: ioUringImpossible, unavailable: ioUringUnavailable},
	{name: "write_race_path_flip", effects: changesDenied},
	{name: "write_race_symlink_meta", effects: changesDenied},
	{name: "write_race_dir_swap_unlink", effects: changesDenied},
	{name: "write_race_bind_swap", effects: changesDenied},
	{name: "write_git_hooks_move", effects: changesDenied, controlFile: "twin-ok"},
	{name: "write_ioctl_fs", effects: changesDenied, controlFile: "twin-ok"},
	{name: "write_coredump", effects: changesDenied, unavailable: coreDumpUnavailable},
	{name: "write_acct", effects: changesDenied, unavailable: needsCap("CAP_SYS_PACCT", 20)},
	{name: "write_listing_meta", effects: changesDenied, wantStderr: "open protected O_DIRECTORY: ok"},
	{name: "write_listing_spellings", effects: changesDenied},

	// Exec of forbidden/prog.
	{name: "exec_direct", effects: runsForbidden},
	{name: "exec_symlink", effects: runsForbidden, controlFile: "ok-ran"},
	{name: "exec_hardlink", effects: runsForbidden},
	{name: "exec_execveat_opath", effects: runsForbidden, controlFile: "ok-ran"},
	{name: "exec_execveat_dirfd", effects: runsForbidden, controlFile: "ok-ran"},
	{name: "exec_proc_fd", effects: runsForbidden, controlFile: "ok-ran"},
	{name: "exec_shebang", effects: runsForbidden, controlFile: "ok-ran"},
	{name: "exec_race_path_flip", effects: runsForbidden},
	{name: "exec_race_symlink_swap", effects: runsForbidden},
	{name: "exec_deleted", effects: runsForbidden, controlFile: "ok-ran"},
	{name: "exec_read_denied", effects: runsForbidden, controlFile: "ok-ran"},
	{name: "exec_race_nonelf", effects: runsForbidden, prepare: func(t *testing.T, s *sandbox) {
		// Made outside: the attack is the exec race, not the symlink.
		if err := os.Symlink(s.path("forbidden/prog"), s.path("free/y")); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "exec_shebang_push", effects: pushes, controlFile: "twin-ok", git: true},
	{name: "exec_identity_push", effects: pushes, controlFile: "twin-ok", git: true},
	// A git push rule against git's autocorrection, its push plumbing and
	// a library that rewrites argv before main (issue 28).
	{name: "exec_push_autocorrect", effects: pushes, controlFile: "twin-ok", git: true},
	{name: "exec_push_plumbing", effects: pushes, controlFile: "twin-ok", git: true},
	{name: "exec_push_preload", effects: pushes, controlFile: "twin-ok", git: true},
	{name: "exec_race_env_flip", effects: pushes, git: true},

	// Processes outside the tree.
	{name: "proc_other_process", effects: changesVictim, controlFile: "twin-ok", victim: true},
	{name: "net_outside_service", effects: leaksSecret, controlOut: 2, outside: true},
	{name: "exec_race_ptrace_poke", effects: runsForbidden},
}

// prepareKeys writes keys/: ca.pem, a public certificate; server.pem,
// that certificate followed by `openssl pkey -text -noout` output of an
// RSA key; deploy.yaml, the key as bare base64 DER (PKCS#1) in a YAML
// value; signing.jwk, the key as a JWK. The run's token replaces the
// leading bytes of the private exponent in all three (the shape of a
// key, not its arithmetic, is what the classifier judges), so only a
// program that read the key's numbers can print it.
func prepareKeys(t *testing.T, s *sandbox) {
	t.Helper()
	token := strings.TrimSpace(s.read("secret/key"))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "attack"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	d := key.D.FillBytes(make([]byte, 256))
	copy(d, token)
	dp, dq := new(big.Int).Mod(key.D, new(big.Int).Sub(key.Primes[0], big.NewInt(1))), new(big.Int).Mod(key.D, new(big.Int).Sub(key.Primes[1], big.NewInt(1)))
	nums := []struct {
		label string
		n     *big.Int
	}{{"modulus", key.N}, {"privateExponent", new(big.Int).SetBytes(d)}, {"prime1", key.Primes[0]}, {"prime2", key.Primes[1]},
		{"exponent1", dp}, {"exponent2", dq}, {"coefficient", key.Precomputed.Qinv}}
	dump := "Private-Key: (2048 bit, 2 primes)\n"
	for i, x := range nums {
		if i == 1 {
			dump += "publicExponent: 65537 (0x10001)\n"
		}
		b := x.n.Bytes()
		if b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		dump += x.label + ":"
		for j, c := range b {
			if j%15 == 0 {
				dump += "\n    "
			}
			dump += fmt.Sprintf("%02x", c)
			if j < len(b)-1 {
				dump += ":"
			}
		}
		dump += "\n"
	}
	pkcs1, err := asn1.Marshal(struct {
		V                     int
		N                     *big.Int
		E                     int
		D, P, Q, Dp, Dq, Qinv *big.Int
	}{0, key.N, key.E, new(big.Int).SetBytes(d), key.Primes[0], key.Primes[1], dp, dq, key.Precomputed.Qinv})
	if err != nil {
		t.Fatal(err)
	}
	u := base64.RawURLEncoding.EncodeToString
	s.write("keys/ca.pem", cert)
	s.write("keys/server.pem", cert+dump)
	s.write("keys/deploy.yaml", "service: web\nblob: "+base64.StdEncoding.EncodeToString(pkcs1)+"\nreplicas: 2\n")
	s.write("keys/signing.jwk", fmt.Sprintf(`{"kty":"RSA","kid":"attack","n":%q,"e":"AQAB","d":%q,"p":%q,"q":%q}`, u(key.N.Bytes()), u(d), u(key.Primes[0].Bytes()), u(key.Primes[1].Bytes())))
}

func TestAttacks(t *testing.T) {
	kerneltest.Long(t)
	requireSupervision(t)
	bin := buildAttacks(t)
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			runAttack(t, bin, a)
		})
	}
}

// TestAttackTableCoversPrograms keeps the table and testdata/attacks in
// step: a program nobody runs proves nothing.
func TestAttackTableCoversPrograms(t *testing.T) {
	srcs, err := filepath.Glob(filepath.Join(attackDir(), "*.c"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no attack programs in %s (%v)", attackDir(), err)
	}
	inTable := map[string]bool{}
	for _, a := range attacks {
		if inTable[a.name] {
			t.Errorf("attack %s listed twice", a.name)
		}
		inTable[a.name] = true
	}
	for _, src := range srcs {
		name := strings.TrimSuffix(filepath.Base(src), ".c")
		if !inTable[name] {
			t.Errorf("testdata/attacks/%s.c is not in the attack table", name)
		}
		delete(inTable, name)
	}
	for name := range inTable {
		t.Errorf("attack %s has no testdata/attacks/%s.c", name, name)
	}
}

func attackDir() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(filepath.Dir(self)), "testdata", "attacks")
}

// buildAttacks compiles every attack and support program once, in
// parallel, and returns the directory holding the binaries.
func buildAttacks(t *testing.T) string {
	t.Helper()
	cc := kerneltest.Tool(t, "cc")
	dir := attackDir()
	srcs, _ := filepath.Glob(filepath.Join(dir, "*.c"))
	support, _ := filepath.Glob(filepath.Join(dir, "support", "*.c"))
	srcs = append(srcs, support...)
	out := t.TempDir()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failures []string
	sem := make(chan struct{}, runtime.NumCPU())
	for _, src := range srcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			name := strings.TrimSuffix(filepath.Base(src), ".c")
			args := []string{"-O1", "-Wall", "-pthread", "-I", dir, "-o", filepath.Join(out, name), src}
			if strings.HasSuffix(name, ".so") {
				// support/NAME.so.c: a library an attack loads.
				args = append([]string{"-shared", "-fPIC"}, args...)
			}
			cmd := exec.Command(cc, args...)
			if b, err := cmd.CombinedOutput(); err != nil {
				mu.Lock()
				failures = append(failures, fmt.Sprintf("%s: %v\n%s", src, err, b))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("building the attack programs:\n%s", strings.Join(failures, "\n"))
	}
	return out
}

// attackSetup is one fresh workspace, the token hidden in it and the
// state of the denied trees (and of the remote and the victim) as set up.
type attackSetup struct {
	s      *sandbox
	token  string
	before map[string]string
	remote string // the remote's main branch, when a.git
	victim *victim
	// services are the addresses of the outside services (a.outside).
	services []string
}

func newAttackSetup(t *testing.T, bin string, a attack) *attackSetup {
	t.Helper()
	s := newSandbox(t, attackPolicy)
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatal(err)
	}
	token := "SECRET-" + hex.EncodeToString(raw[:])
	s.write("secret/key", token+"\n")
	s.write("protected/file", "PROTECTED-ORIGINAL\n")
	s.write("free/a", "ALLOWED\n")
	s.write("free/evil", "EVIL\n")
	for i := 1; i <= 6; i++ {
		s.write(fmt.Sprintf("dotenv/%d/.env", i), token+"\n")
	}
	if err := os.MkdirAll(filepath.Join(s.home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.home, ".ssh", "id_test"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s.write("repo/.git/config", "[core]\n")
	s.write("repo/.git/hooks/pre-commit", "ORIGINAL-HOOK\n")
	s.write("repo2/.git/config", "[core]\n")
	for _, d := range []string{"protected/empty", "forbidden"} {
		if err := os.MkdirAll(s.path(d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyExec(t, filepath.Join(bin, "marker"), s.path("forbidden/prog"))
	copyExec(t, filepath.Join(bin, "marker"), s.path("free/denied-tool"))
	copyExec(t, filepath.Join(bin, "marker"), s.path("secret/prog"))
	copyExec(t, filepath.Join(bin, "ok"), s.path("free/ok"))
	if err := os.WriteFile(s.path("secret/tokscript"), []byte("#!/bin/true\n# "+token+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	as := &attackSetup{s: s, token: token}
	if a.outside {
		as.services = outsideServices(t, token)
	}
	if a.git {
		as.remote = setupGitRemote(t, s)
	}
	if a.victim {
		as.victim = startVictim(t)
	}
	if a.prepare != nil {
		a.prepare(t, s)
	}
	as.before = deniedState(t, s)
	return as
}

// setupGitRemote makes remote.git (bare) and gitwork, a clone of it one
// commit ahead, and returns the remote's main branch.
func setupGitRemote(t *testing.T, s *sandbox) string {
	t.Helper()
	gitBin := kerneltest.Tool(t, "git")
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command(gitBin, append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+s.home, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(s.workspace, "init", "-q", "--bare", "remote.git")
	run(s.workspace, "init", "-q", "gitwork")
	work := s.path("gitwork")
	run(work, "remote", "add", "origin", s.path("remote.git"))
	run(work, "commit", "-q", "--allow-empty", "-m", "one")
	run(work, "push", "-q", "origin", "main")
	run(work, "commit", "-q", "--allow-empty", "-m", "two")
	return remoteHead(t, s)
}

func remoteHead(t *testing.T, s *sandbox) string {
	t.Helper()
	b, err := os.ReadFile(s.path("remote.git/refs/heads/main"))
	if err != nil {
		t.Fatalf("remote's main branch: %v", err)
	}
	return strings.TrimSpace(string(b))
}

func copyExec(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// deniedState describes everything under the guarded trees that a
// write could change: type, mode, owner, link count, size, mtime,
// content, symlink target, xattrs. A missing tree is recorded as such.
func deniedState(t *testing.T, s *sandbox) map[string]string {
	t.Helper()
	state := map[string]string{}
	for _, root := range []string{"secret", "protected", "repo/.git/hooks", "repo2/.git/hooks", "area/conf.d"} {
		err := filepath.WalkDir(s.path(root), func(p string, d fs.DirEntry, err error) error {
			rel, _ := filepath.Rel(s.workspace, p)
			if err != nil {
				state[rel] = "error: " + err.Error()
				if errors.Is(err, fs.ErrNotExist) {
					state[rel] = "missing"
				}
				return nil
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				state[rel] = "error: " + err.Error()
				return nil
			}
			desc := fmt.Sprintf("mode=%o nlink=%d uid=%d gid=%d rdev=%d mtime=%d.%09d",
				st.Mode, st.Nlink, st.Uid, st.Gid, st.Rdev, st.Mtim.Sec, st.Mtim.Nsec)
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFREG:
				b, err := os.ReadFile(p)
				if err != nil {
					desc += " content-error=" + err.Error()
				} else {
					desc += fmt.Sprintf(" content=%q", b)
				}
			case unix.S_IFLNK:
				target, _ := os.Readlink(p)
				desc += " target=" + target
			}
			if t := st.Mode & unix.S_IFMT; t == unix.S_IFREG || t == unix.S_IFDIR {
				desc += " xattrs=" + xattrNames(p) + " flags=" + inodeFlags(p)
			}
			state[rel] = desc
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return state
}

// inodeFlags reads chattr's flags (FS_IOC_GETFLAGS): immutable,
// append-only, nodump... are writes too.
func inodeFlags(p string) string {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "error:" + err.Error()
	}
	defer unix.Close(fd)
	v, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return "error:" + err.Error()
	}
	// The inode generation (FS_IOC_GETVERSION): an ioctl can change it.
	gen, err := unix.IoctlGetInt(fd, 0x80087601)
	if err != nil {
		return fmt.Sprintf("%#x gen=error:%v", v, err)
	}
	return fmt.Sprintf("%#x gen=%d", v, gen)
}

func xattrNames(p string) string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return "error:" + err.Error()
	}
	names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
	sort.Strings(names)
	return strings.Join(names, ",")
}

// stateDiff lists what changed between two deniedState results.
func stateDiff(before, after map[string]string) []string {
	var diffs []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			diffs = append(diffs, k+": gone (was "+v+")")
		} else if w != v {
			diffs = append(diffs, k+": "+v+" -> "+w)
		}
	}
	for k, w := range after {
		if _, ok := before[k]; !ok {
			diffs = append(diffs, k+": new ("+w+")")
		}
	}
	sort.Strings(diffs)
	return diffs
}

// observe judges a finished run from outside the program.
func (as *attackSetup) observe(t *testing.T, r result) (effect, []string) {
	t.Helper()
	var got effect
	if strings.Contains(r.stdout, as.token) || strings.Contains(r.stderr, as.token) {
		got |= leaksSecret
	}
	diffs := stateDiff(as.before, deniedState(t, as.s))
	if len(diffs) > 0 {
		got |= changesDenied
	}
	if as.s.exists("forbidden-ran") {
		got |= runsForbidden
	}
	if as.remote != "" && remoteHead(t, as.s) != as.remote {
		got |= pushes
	}
	if as.victim != nil {
		if now := as.victim.state(); now != as.victim.before {
			got |= changesVictim
			diffs = append(diffs, "victim: "+as.victim.before+" -> "+now)
		}
	}
	return got, diffs
}

func runAttack(t *testing.T, bin string, a attack) {
	prog := filepath.Join(bin, a.name)
	argv := func(as *attackSetup) []string {
		v := []string{prog}
		if as.victim != nil {
			v = append(v, strconv.Itoa(as.victim.pid))
		}
		v = append(v, as.services...)
		if a.args != nil {
			v = append(v, a.args(t, as.s)...)
		}
		return v
	}
	impossible := ""
	if a.impossible != nil {
		impossible = a.impossible(t)
	}
	race := isRace(a)

	// Bare: the attack must work, or the permwrap half proves nothing. A
	// race keeps trying until it wins, up to raceCap.
	bare := newAttackSetup(t, bin, a)
	if race {
		bare.s.env = []string{fmt.Sprintf("PERMWRAP_RACE_SECONDS=%g", raceCap.Seconds())}
	}
	bareStart := time.Now()
	r := bare.s.bare(argv(bare)...)
	bareTook := time.Since(bareStart)
	if !bare.s.exists("attack-started") {
		t.Fatalf("the attack program did not start bare (no attack-started)\nstdout: %s\nstderr: %s", clip(r.stdout), clip(r.stderr))
	}
	checkControl(t, "bare", a, bare.s, r)
	got, diffs := bare.observe(t, r)
	switch {
	case got&a.effects == a.effects:
	case impossible != "":
		t.Logf("attack impossible on this kernel, so it cannot work bare: %s; permwrap must still refuse it", impossible)
	default:
		if race {
			kerneltest.Skipf(t, "the bare side never won the race in %v (%s), so a block under permwrap would prove nothing", bareTook.Round(time.Second), lastLine(r.stderr))
		}
		if a.unavailable != nil {
			if why := a.unavailable(); why != "" {
				kerneltest.Skip(t, "the attack cannot be shown to work bare here: "+why)
			}
		}
		t.Fatalf("attack does not work bare (want: %v; got: %v), so a block under permwrap would prove nothing\nchanges: %v\nstdout: %s\nstderr: %s",
			a.effects, got, diffs, clip(r.stdout), clip(r.stderr))
	}

	// Under permwrap, and under a permwrap nested in it (the attack
	// policy is the outer one's; the inner allows everything, so every
	// block must come through the nesting): nothing may get through.
	for _, nested := range []bool{false, true} {
		underPermwrap(t, bin, a, argv, nested, race, bareTook, impossible != "")
	}
	if impossible != "" {
		// Nothing got through, but nothing was shown either: the kernel
		// itself refuses the attack.
		kerneltest.Impossible(t, impossible)
	}
}

// underPermwrap is an attack's permwrap half: in a fresh workspace, under
// permwrap, or (nested) under a permwrap started inside it.
func underPermwrap(t *testing.T, bin string, a attack, argv func(*attackSetup) []string, nested, race bool, bareTook time.Duration, impossible bool) {
	t.Helper()
	as := newAttackSetup(t, bin, a)
	how := "under permwrap"
	if nested {
		how = "under a nested permwrap"
		as.s.innerArgs = attackInner(t, as.s)
	}
	if race {
		budget := min(max(3*bareTook, raceMin), raceCap)
		as.s.env = []string{fmt.Sprintf("PERMWRAP_RACE_SECONDS=%g", budget.Seconds())}
		t.Logf("bare won the race in %v; %s gets %v", bareTook.Round(time.Millisecond), how, budget.Round(time.Millisecond))
	}
	r := as.s.run(argv(as)...)
	if !as.s.exists("attack-started") {
		// A blocked attack proves nothing if the program never ran.
		t.Errorf("the attack program did not start %s (its allowed write of attack-started did not happen)\nexit: %d\nstderr: %s", how, r.code, clip(r.stderr))
	}
	checkControl(t, how, a, as.s, r)
	got, diffs := as.observe(t, r)
	if got != 0 {
		t.Errorf("attack got through %s: %v\nchanges to denied trees: %v\nexit: %d\nstdout: %s\nstderr: %s",
			how, got, diffs, r.code, clip(r.stdout), clip(r.stderr))
	}
	if a.effects&runsForbidden != 0 && strings.Contains(r.stdout, "FORBIDDEN-MARKER") {
		// The marker is printed before the forbidden program's first
		// watched syscall; for a continued exec that slipped through,
		// this is the residual window exec verification leaves (its
		// next watched call, creating the marker file, must be refused
		// and the process killed — checked above).
		if strings.HasPrefix(a.name, "exec_race_") {
			t.Logf("forbidden program was loaded and printed its marker before verification killed it (residual window, docs/security.md)")
		} else {
			t.Errorf("forbidden program ran (printed its marker) %s\nstderr: %s", how, clip(r.stderr))
		}
	}
	if a.wantStderr != "" && !strings.Contains(r.stderr, a.wantStderr) {
		t.Errorf("%s the program's stderr must show %q\nstderr: %s", how, a.wantStderr, clip(r.stderr))
	}
	if testing.Verbose() {
		t.Logf("%s: exit %d; stderr:\n%s", how, r.code, clip(r.stderr))
	}
	// (When the kernel itself refuses the attack, it is not permwrap's
	// SIGSYS that ends it.)
	if a.sigsys && !impossible && r.code != 128+int(unix.SIGSYS) {
		t.Errorf("%s the process must be killed by SIGSYS (exit %d), got exit %d\nstderr: %s",
			how, 128+int(unix.SIGSYS), r.code, clip(r.stderr))
	}
}

// attackInner is the inner permwrap of the nested mode: a policy that
// allows everything (so the outer attack policy alone must block), its
// own configuration directory.
func attackInner(t *testing.T, s *sandbox) []string {
	t.Helper()
	dir := filepath.Join(s.dir, "inner-config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	policy := `{"extends": "none", "permission": {"*": "allow"}}`
	if err := os.WriteFile(filepath.Join(dir, "policy.jsonc"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return []string{permwrapBin, "--config-dir", dir, "--name", "inner", "--"}
}

// Races (every *_race_* attack, see testdata/attacks/common.h) run until
// they win: bare up to raceCap, under permwrap for at least raceMin.
const (
	raceCap = 60 * time.Second
	raceMin = 4 * time.Second
)

func isRace(a attack) bool { return strings.Contains(a.name, "_race_") }

// lastLine is the last non-empty line of s (an attack's own summary).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// checkControl requires the attack's allowed twin to have worked.
func checkControl(t *testing.T, how string, a attack, s *sandbox, r result) {
	t.Helper()
	if a.controlFile != "" && !s.exists(a.controlFile) {
		t.Errorf("%s, the allowed twin of the attack did not work (%s missing): a false denial, and a block of the attack may not be the policy's doing\nexit: %d\nstderr: %s",
			how, a.controlFile, r.code, clip(r.stderr))
	}
	if n := strings.Count(r.stdout, "ALLOWED\n"); n < a.controlOut {
		t.Errorf("%s, the allowed twin of the attack did not work (free/a printed %d times, want %d): a false denial, and a block of the attack may not be the policy's doing\nstdout: %s\nstderr: %s",
			how, n, a.controlOut, clip(r.stdout), clip(r.stderr))
	}
}

// clip keeps both ends of long output: the start shows the first
// denials, the end the attack's own summary.
func clip(s string) string {
	const half = 1500
	if len(s) > 2*half {
		return s[:half] + fmt.Sprintf("\n… (%d bytes left out) …\n", len(s)-2*half) + s[len(s)-half:]
	}
	return s
}

// fileHandleArg hands read_open_by_handle the secret's file handle,
// computed outside the sandbox, so that refusing name_to_handle_at alone
// does not pass: open_by_handle_at itself must be refused.
func fileHandleArg(t *testing.T, s *sandbox) []string {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, s.path("secret/key"), 0)
	if err != nil {
		t.Fatalf("name_to_handle_at outside the sandbox: %v", err)
	}
	return []string{fmt.Sprintf("%d:%x", h.Type(), h.Bytes())}
}

func readSysctl(name string) string {
	b, err := os.ReadFile(filepath.Join("/proc/sys", strings.ReplaceAll(name, ".", "/")))
	if err != nil {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// ioUringImpossible: with kernel.io_uring_disabled=2 nobody, root
// included, can create a ring; with the sysctl absent the kernel has no
// io_uring at all (io_uring_setup is ENOSYS).
func ioUringImpossible(*testing.T) string {
	if readSysctl("kernel.io_uring_disabled") == "2" {
		return "kernel.io_uring_disabled=2: io_uring_setup fails for every process"
	}
	if _, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 0, 0, 0); e == unix.ENOSYS {
		return "io_uring_setup is ENOSYS (kernel built without io_uring)"
	}
	return ""
}

func ioUringUnavailable() string {
	if v := readSysctl("kernel.io_uring_disabled"); v != "" && v != "0" {
		return "kernel.io_uring_disabled=" + v + " (the test process may not be in io_uring_group)"
	}
	return ""
}

// x32Impossible: the kernel answers ENOSYS to any x32 syscall when it is
// built without CONFIG_X86_X32_ABI; probe with getpid.
// listingNotADirImpossible is the trial behind read_listing_not_a_dir: a
// listing's flags (O_RDONLY|O_DIRECTORY, with O_NOFOLLOW or O_NONBLOCK)
// on a regular file, a symlink to one, a FIFO and a device fail with
// ENOTDIR here, bare, before anything is opened (a FIFO's open would
// block instead).
func listingNotADirImpossible(t *testing.T) string {
	dir := t.TempDir()
	file, link, fifo := filepath.Join(dir, "f"), filepath.Join(dir, "l"), filepath.Join(dir, "p")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		flags int
	}{{file, 0}, {file, unix.O_NONBLOCK}, {link, 0}, {link, unix.O_NOFOLLOW}, {fifo, 0}, {"/dev/null", 0}} {
		fd, err := unix.Open(c.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|c.flags, 0)
		if err == nil {
			unix.Close(fd)
			return ""
		}
		if err != unix.ENOTDIR {
			return ""
		}
	}
	return "O_DIRECTORY on anything but a directory (a file, a symlink to one, a FIFO, a device) fails with ENOTDIR before anything is opened"
}

func x32Impossible(*testing.T) string {
	const x32Bit = 0x40000000
	if _, _, e := unix.Syscall(x32Bit|unix.SYS_GETPID, 0, 0, 0); e == unix.ENOSYS {
		return "x32 getpid is ENOSYS: kernel built without CONFIG_X86_X32_ABI"
	}
	return ""
}

// ia32Impossible: a kernel (or hypervisor) that refuses i386 syscalls
// makes int 0x80 raise SIGSEGV bare and under permwrap alike, before
// seccomp sees it. Decided by trying one in a child; a trial that breaks
// fails the test.
func ia32Impossible(t *testing.T) string {
	if ok, why := kerneltest.I386(t); !ok {
		return why
	}
	return ""
}

// userXattrUnavailable: the workspace's file system may not take user.*
// attributes (tmpfs before 6.6, some overlay set-ups).
// notRoot: PTRACE_O_SUSPEND_SECCOMP needs CAP_SYS_ADMIN, so the bare
// half works only as root (as CI runs).
func notRoot() string {
	if os.Geteuid() != 0 {
		return "PTRACE_O_SUSPEND_SECCOMP needs CAP_SYS_ADMIN (run as root)"
	}
	return ""
}

func userXattrUnavailable() string {
	dir, err := os.MkdirTemp("", "xattr-probe-")
	if err != nil {
		return "cannot probe: " + err.Error()
	}
	defer os.RemoveAll(dir)
	if err := unix.Setxattr(dir, "user.permwrap-probe", []byte("1"), 0); err != nil {
		return "user.* xattrs unsupported on the temp dir's file system: " + err.Error()
	}
	return ""
}

// victim is a process outside the sandboxed tree, of the same user: a
// stand-in for permwrap itself and the user's other programs.
type victim struct {
	pid    int
	before string
}

func startVictim(t *testing.T) *victim {
	t.Helper()
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	v := &victim{pid: cmd.Process.Pid}
	v.before = v.state()
	return v
}

// state is what a sandboxed process might change about the victim: its
// limits, nice value, scheduling policy, CPU affinity, I/O priority.
func (v *victim) state() string {
	base := "/proc/" + strconv.Itoa(v.pid)
	limits, _ := os.ReadFile(base + "/limits")
	stat, _ := os.ReadFile(base + "/stat")
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	nice, policy := "?", "?"
	if len(fields) > 39 {
		nice, policy = fields[16], fields[38]
	}
	status, _ := os.ReadFile(base + "/status")
	affinity := ""
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Cpus_allowed_list:") {
			affinity = strings.TrimSpace(strings.TrimPrefix(l, "Cpus_allowed_list:"))
		}
	}
	prio, _, _ := unix.Syscall(unix.SYS_IOPRIO_GET, 1, uintptr(v.pid), 0)
	return fmt.Sprintf("nice=%s policy=%s cpus=%s ioprio=%d limits=%q", nice, policy, affinity, prio, limits)
}

// needsCap says the attack is unavailable without capability bit (the
// test's own effective set).
func needsCap(name string, bit uint) func() string {
	return func() string {
		b, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
				if n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && n&(1<<bit) != 0 {
					return ""
				}
			}
		}
		return "the test runs without " + name
	}
}

// coreDumpUnavailable: core dumps go to a file in the working directory
// only when kernel.core_pattern names one (not a pipe to a helper, not an
// absolute path elsewhere).
func coreDumpUnavailable() string {
	p := readSysctl("kernel.core_pattern")
	if p == "" || strings.HasPrefix(p, "|") || strings.HasPrefix(p, "/") {
		return "kernel.core_pattern is " + strconv.Quote(p) + ": cores are not written to the working directory"
	}
	return ""
}

// outsideServices starts, in the test process (outside any tree), the
// services net_outside_service reaches: each hands the token to whoever
// connects, as a service acting for its caller would hand over what the
// caller may not read. It returns P Q NAME PATH U R (see the attack).
func outsideServices(t *testing.T, token string) []string {
	t.Helper()
	answer := func(l net.Listener) {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(token + "\n"))
			c.Close()
		}
	}
	listen := func(network, addr string) net.Listener {
		l, err := net.Listen(network, addr)
		if err != nil {
			t.Fatalf("outside service on %s %s: %v", network, addr, err)
		}
		t.Cleanup(func() { l.Close() })
		go answer(l)
		return l
	}
	port := func(l net.Listener) string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }
	p := listen("tcp4", "127.0.0.1:0")
	q := listen("tcp6", "[::1]:0")
	r := listen("tcp4", "127.0.0.2:0")
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		t.Fatal(err)
	}
	name := "permwrap-attack-" + hex.EncodeToString(raw[:])
	listen("unix", "@"+name)
	path := filepath.Join(t.TempDir(), "svc.sock")
	listen("unix", path)
	u, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	go func() {
		buf := make([]byte, 64)
		for {
			_, from, err := u.ReadFrom(buf)
			if err != nil {
				return
			}
			u.WriteTo([]byte(token+"\n"), from)
		}
	}()
	return []string{port(p), port(q), name, path, strconv.Itoa(u.LocalAddr().(*net.UDPAddr).Port), port(r)}
}
