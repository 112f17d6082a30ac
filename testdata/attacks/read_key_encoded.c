/* read_key_encoded: read private keys that carry no PEM armour and no
 * marker: a YAML value holding a PKCS#1 RSA key as bare base64 DER, and
 * a JWK whose "d" is the private exponent. Print them raw and with every
 * base64 run decoded.
 * Judged by: the secret's token on stdout (it is in the exponent's
 * bytes, so only decoding shows it).
 * Control: the public certificate keys/ca.pem is read; ./twin-ok. */
#include "keydecode.h"
int main(void)
{
	static char buf[1 << 20];
	twin();
	if (slurp("keys/deploy.yaml", buf, sizeof buf) > 0) {
		fputs(buf, stdout);
		print_base64(buf);
	}
	if (slurp("keys/signing.jwk", buf, sizeof buf) > 0) {
		fputs(buf, stdout);
		print_base64(buf);
	}
	return 0;
}
