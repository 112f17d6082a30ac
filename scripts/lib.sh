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
		as_root apt-get update -qq >&2
		apt_updated=1
	fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

ensure_go() {
	if ! command -v go >/dev/null 2>&1; then
		if [ -x /usr/local/go/bin/go ]; then
			export PATH="/usr/local/go/bin:$PATH"
		else
			apt_install golang-go
		fi
	fi
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
}

build_permwrap() {
	local root
	root=$(repo_root)
	(cd "$root" && go build -o bin/permwrap ./cmd/permwrap)
	echo "$root/bin/permwrap"
}
