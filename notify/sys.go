package notify

//go:generate go run gen_sysnames.go

import "strconv"

// SyscallName is the x86_64 name of nr for logs and the decoder; numbers
// this build does not know print as "syscall_N" rather than failing.
func SyscallName(nr int32) string {
	if n, ok := sysNames[nr]; ok {
		return n
	}
	return "syscall_" + strconv.Itoa(int(nr))
}
