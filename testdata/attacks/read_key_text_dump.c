/* read_key_text_dump: read a .pem that holds a certificate followed by
 * `openssl pkey -text -noout` of a private key (Private-Key:, modulus:,
 * privateExponent:, colon-hex lines) and print it, raw and with its hex
 * decoded. The content rule on keys/ must see the dump as a key.
 * Judged by: the secret's token on stdout (it is in the private
 * exponent's hex).
 * Control: the public certificate keys/ca.pem is read; ./twin-ok. */
#include "keydecode.h"
int main(void)
{
	static char buf[1 << 20];
	twin();
	if (slurp("keys/server.pem", buf, sizeof buf) <= 0)
		return 0;
	fputs(buf, stdout);
	print_colon_hex(buf);
	return 0;
}
