#!/usr/bin/env bash
# Tests/replicate/certs.sh DIR - the TLS material replicate.so's tests use,
# made with openssl in DIR (mode 0700, files 0600; nothing outside it):
#   ca.pem, ca.key          a certificate authority (RSA 2048, 2 days)
#   server.pem, server.key  a server certificate it signed, for 127.0.0.1 and
#                           localhost (subjectAltName IP and DNS)
#   client.pem, client.key  a client certificate it signed
#   other-ca.pem            another authority, which signed nothing here
#   other.pem, other.key    a server certificate for 127.0.0.1 signed by it
set -euo pipefail
dir=$1
mkdir -p "$dir"
chmod 0700 "$dir"
cd "$dir"
umask 077
quiet() { "$@" >/dev/null 2>&1 || { echo "certs.sh: failed: $*" >&2; "$@"; exit 1; }; }
ca() { # NAME SUBJECT
  quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "$2" -keyout "$1.key" -out "$1.pem" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign
}
signed() { # NAME CA SUBJECT EXTENSIONS
  quiet openssl req -newkey rsa:2048 -nodes -subj "$3" -keyout "$1.key" -out "$1.csr"
  printf '%s\n' "$4" >"$1.ext"
  quiet openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 -out "$1.pem" \
    -extfile "$1.ext"
  rm -f "$1.csr" "$1.ext"
}
ca ca "/CN=turnstate test CA"
ca other-ca "/CN=another CA"
signed server ca "/CN=127.0.0.1" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
signed client ca "/CN=replicate test client" "extendedKeyUsage=clientAuth"
signed other other-ca "/CN=127.0.0.1" "subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth"
rm -f ./*.srl
