/*
 * Decoders for the read_key_* attacks: what an attacker does with a key
 * it read. The programs print each file raw and then decoded, so the
 * run's token, which the test hides in the key's numbers, shows on
 * stdout only if the key's bytes were read.
 */
#ifndef PERMWRAP_ATTACK_KEYDECODE_H
#define PERMWRAP_ATTACK_KEYDECODE_H
#include "common.h"

/* slurp reads path (at most cap-1 bytes) into buf; -1 if it cannot. */
static inline ssize_t slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		note("open %s: %s", path, strerror(errno));
		return -1;
	}
	size_t n = 0;
	ssize_t r;
	while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += r;
	close(fd);
	buf[n] = 0;
	note("read %s: %zu bytes", path, n);
	return n;
}

static inline int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* print_colon_hex prints the bytes of every "xx:xx:" pair in s. */
static inline void print_colon_hex(const char *s)
{
	for (; s[0] && s[1]; s++) {
		int h = hexval(s[0]), l = hexval(s[1]);
		if (h >= 0 && l >= 0 && (s[2] == ':' || s[2] == '\n')) {
			putchar(h << 4 | l);
			s += 1;
		}
	}
	putchar('\n');
}

static inline int b64val(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+' || c == '-')
		return 62;
	if (c == '/' || c == '_')
		return 63;
	return -1;
}

/* print_base64 decodes every run of 16 or more base64 characters in s
 * (either alphabet) and prints the bytes. */
static inline void print_base64(const char *s)
{
	while (*s) {
		const char *e = s;
		while (b64val(*e) >= 0)
			e++;
		if (e - s >= 16) {
			unsigned acc = 0;
			int n = 0;
			for (const char *p = s; p < e; p++) {
				acc = acc << 6 | b64val(*p);
				if (++n == 4) {
					putchar(acc >> 16 & 0xff);
					putchar(acc >> 8 & 0xff);
					putchar(acc & 0xff);
					acc = n = 0;
				}
			}
			putchar('\n');
		}
		s = *e ? e + 1 : e;
	}
}

/* twin reads the public certificate beside the keys: it must work in
 * both runs. */
static inline void twin(void)
{
	static char buf[65536];
	if (slurp("keys/ca.pem", buf, sizeof buf) > 0 && strstr(buf, "BEGIN CERTIFICATE"))
		close(open("twin-ok", O_WRONLY | O_CREAT, 0644));
}
#endif
