#!/bin/sh
# Makes the key fixtures of engine/secret_keys_test.go. Every key here was
# made for the tests only and protects nothing ("test-only" in each name).
# Run from this directory: sh make.sh (needs openssl, ssh-keygen, puttygen, gpg).
set -eu
rm -f test-only-*
o() { openssl "$@" 2>/dev/null; }
o genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out test-only-rsa.key
o genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out test-only-ec.key
o genpkey -algorithm ED25519 -out test-only-ed25519.key
o genpkey -algorithm X25519 -out test-only-x25519.key
o genpkey -genparam -algorithm DSA -pkeyopt dsa_paramgen_bits:2048 -out dsa.param
o genpkey -paramfile dsa.param -out test-only-dsa.key
o genpkey -algorithm DH -pkeyopt dh_rfc5114:2 -out test-only-dh.key || o genpkey -algorithm DH -pkeyopt group:ffdhe2048 -out test-only-dh.key
rm -f dsa.param
# PEM encodings: PKCS#1, SEC1, encrypted PKCS#8, DER.
o rsa -in test-only-rsa.key -traditional -out test-only-rsa-pkcs1.pem
o ec -in test-only-ec.key -out test-only-ec-sec1.pem
o pkcs8 -topk8 -in test-only-rsa.key -v2 aes-256-cbc -passout pass:test -out test-only-rsa-encrypted.pem
o pkey -in test-only-rsa.key -outform DER -out test-only-rsa-pkcs8.der
o rsa -in test-only-rsa.key -traditional -outform DER -out test-only-rsa-pkcs1.der
o ec -in test-only-ec.key -outform DER -out test-only-ec-sec1.der
o pkcs8 -topk8 -in test-only-ec.key -v2 aes-256-cbc -passout pass:test -outform DER -out test-only-ec-encrypted.der
# Text dumps of the private keys, and their public twins.
for k in rsa ec ed25519 x25519 dsa dh; do
	o pkey -in test-only-$k.key -text -noout > test-only-$k-dump.txt
	o pkey -in test-only-$k.key -pubout -out test-only-$k-pub.pem
	o pkey -pubin -in test-only-$k-pub.pem -text -noout > test-only-$k-pub-dump.txt
done
# A certificate, its text dump, a CSR and a CRL-free CA bundle stand-in.
o req -new -x509 -key test-only-rsa.key -subj /CN=test-only -days 3650 -out test-only-cert.pem
o x509 -in test-only-cert.pem -text -noout > test-only-cert-dump.txt
o req -new -key test-only-ec.key -subj /CN=test-only -out test-only.csr
o req -in test-only.csr -text -noout > test-only-csr-dump.txt
# OpenSSH and PuTTY.
ssh-keygen -q -t ed25519 -N '' -C test-only -f test-only-ssh-ed25519
ssh-keygen -q -t rsa -b 2048 -N '' -C test-only -f test-only-ssh-rsa
ssh-keygen -q -t ed25519 -N 'test' -C test-only -f test-only-ssh-encrypted
rm -f test-only-ssh-encrypted.pub
puttygen test-only-ssh-ed25519 -o test-only-putty.ppk -O private
puttygen test-only-ssh-ed25519 -o test-only-putty-pub.txt -O public
# JWKs are made by the test (Go's crypto), age identities too.
# PGP: an Ed25519 key without a passphrase, armoured, and its public key.
G=$(mktemp -d)
gpg --homedir "$G" --batch --quiet --pinentry-mode loopback --passphrase '' --quick-gen-key 'test-only <test-only@example.invalid>' ed25519 sign never
gpg --homedir "$G" --batch --pinentry-mode loopback --passphrase '' --armor --export-secret-keys test-only@example.invalid > test-only-pgp-secret.asc
gpg --homedir "$G" --armor --export test-only@example.invalid > test-only-pgp-public.asc
rm -rf "$G"
