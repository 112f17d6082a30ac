# shellcheck shell=bash
# Shared set-up for the scripts in this folder: make sure the machine has
# what permwrap needs to build (Go, cgo's compiler, libseccomp) and, for the
# tests, the real programs the workload tests run. Idempotent and quiet when
# everything is already there.

set -euo pipefail

repo_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# How long (seconds) apt_get waits for another apt or dpkg (an unattended
# upgrade, another build's install) to let go of the package manager's
# locks before it gives up.
apt_lock_wait=${PERMWRAP_APT_LOCK_WAIT:-900}

# apt_get runs apt-get as root, waiting for the package manager's locks
# instead of failing at once when another apt holds them: dpkg's lock
# through DPkg::Lock::Timeout, and (apt-get update's lists lock, which
# older apt does not wait for) by trying again every 5 seconds.
apt_get() {
	local start=$SECONDS said=0 out rc
	while :; do
		rc=0
		out=$(as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$apt_lock_wait" "$@" 2>&1) || rc=$?
		if [ $rc -eq 0 ]; then
			[ -z "$out" ] || printf '%s\n' "$out" >&2
			return 0
		fi
		if grep -qiE 'could not get lock|unable to lock|unable to acquire the dpkg frontend lock' <<<"$out" &&
			[ $((SECONDS - start)) -lt "$apt_lock_wait" ]; then
			if [ $said -eq 0 ]; then
				echo "permwrap setup: another apt or dpkg holds the package manager's lock; waiting up to ${apt_lock_wait}s (PERMWRAP_APT_LOCK_WAIT)" >&2
				said=1
			fi
			sleep 5
			continue
		fi
		printf '%s\n' "$out" >&2
		return $rc
	done
}

apt_updated=0
apt_install() {
	# Installs the given Debian packages that are missing.
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "permwrap setup: installing ${missing[*]}" >&2
	if [ $apt_updated -eq 0 ]; then
		apt_get update -qq
		apt_updated=1
	fi
	apt_get install -y -qq --no-install-recommends "${missing[@]}"
}

# The Go release permwrap is built with (go.mod needs 1.26).
go_want=1.26.8

# go_new_enough reports whether the go on PATH is at least 1.26.
go_new_enough() {
	command -v go >/dev/null 2>&1 || return 1
	local v
	v=$(go env GOVERSION 2>/dev/null) || return 1
	v=${v#go}
	local major=${v%%.*} rest=${v#*.}
	local minor=${rest%%.*}
	[ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "${minor%%[!0-9]*}" -ge 26 ]; }
}

ensure_go() {
	[ -x /usr/local/go/bin/go ] && export PATH="/usr/local/go/bin:$PATH"
	if ! go_new_enough; then
		# Debian's own Go is older than 1.26. It can still fetch the
		# official toolchain from the Go module proxy, as the module
		# golang.org/toolchain (what GOTOOLCHAIN does on newer Go).
		command -v go >/dev/null 2>&1 || apt_install golang-go
		local arch
		case "$(uname -m)" in
		x86_64) arch=amd64 ;;
		aarch64) arch=arm64 ;;
		*) echo "permwrap setup: no Go toolchain for $(uname -m)" >&2; return 1 ;;
		esac
		echo "permwrap setup: fetching Go $go_want from the module proxy" >&2
		local dir
		# (Outside any module: an old go cannot even parse our go.mod.)
		dir=$(cd / && GO111MODULE=on GOFLAGS=-modcacherw go mod download -json "golang.org/toolchain@v0.0.1-go$go_want.linux-$arch" |
			sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
		if [ -z "$dir" ] || [ ! -f "$dir/bin/go" ]; then
			echo "permwrap setup: could not fetch the Go toolchain" >&2
			return 1
		fi
		chmod -R u+x "$dir/bin" "$dir/pkg/tool" 2>/dev/null || true
		export PATH="$dir/bin:$PATH"
	fi
	export GOTOOLCHAIN=local
	export PATH="$(go env GOPATH)/bin:$PATH"
}

ensure_build_deps() {
	apt_install libseccomp-dev gcc pkg-config
	ensure_go
	export CGO_ENABLED=1
}

ensure_test_deps() {
	ensure_build_deps
	# Real programs the workload and prompt tests drive.
	apt_install tmux git make tar python3 strace
	# The network tests: curl through permwrap's proxy, ip for their own
	# network namespaces (loopback and veth pairs only), nft for a NAT
	# rule inside a test's own namespace (a forged name server's answer).
	apt_install curl iproute2 nftables
	# The daily battery (supervisor/battery_test.go): a venv with pip and
	# pytest from Debian's python3, vim, gdb, unshare (util-linux).
	apt_install python3-venv python3-pytest vim gdb util-linux
	# The second battery (supervisor/daily_test.go): less in a pty
	# (script, from bsdutils), ssh-keygen, grep.
	apt_install less bsdutils openssh-client grep
	# Node and npm may come from elsewhere than Debian (nodesource, nvm):
	# installed only when there is none at all. The prompt tests drive
	# Node terminal programs (testdata/tui); a workload test runs npm.
	command -v node >/dev/null 2>&1 || apt_install nodejs
	command -v npm >/dev/null 2>&1 || apt_install npm
}

build_permwrap() {
	local root
	root=$(repo_root)
	(cd "$root" && go build -o bin/permwrap ./cmd/permwrap)
	echo "$root/bin/permwrap"
}

# build_roundtrip: the benchmark tool that answers every notification
# CONTINUE (internal/cmd/roundtrip), scripts/bench's roundtrip, rtsync and
# rtemu columns.
build_roundtrip() {
	local root
	root=$(repo_root)
	(cd "$root" && go build -o bin/roundtrip ./internal/cmd/roundtrip)
	echo "$root/bin/roundtrip"
}

# build_openloop: in the current directory, ./openloop [N] — N (default
# 20000) open/read/close of data.txt, which it writes too. The workload
# of scripts/bench's open loop, scripts/profile's open mode and
# scripts/placement.
build_openloop() {
	cat > openloop.c <<'C'
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) { int n = argc > 1 ? atoi(argv[1]) : 20000; char b[64]; for (int i = 0; i < n; i++) { int fd = open("data.txt", O_RDONLY); if (fd < 0) return 1; if (read(fd, b, sizeof b) < 0) return 1; close(fd); } return 0; }
C
	cc -O2 -o openloop openloop.c
	echo hello > data.txt
}
