#!/usr/bin/env bash
# A private CA and one certificate for the cluster's nodes (scheduler, workers,
# clients), signed by it.  For a test or a closed network; with an
# organisation's CA, sign the node certificate there instead.
#   deploy/tls/make-certs.sh OUT_DIR [extra SAN entries, e.g. DNS:scheduler.example.org IP:10.0.0.5]
# Writes OUT_DIR/ca.pem, ca-key.pem, node.pem, node-key.pem (keys mode 600).
set -euo pipefail
OUT=${1:?usage: make-certs.sh OUT_DIR [SAN ...]}
shift
DAYS=${DAYS:-365}
SAN="DNS:localhost,IP:127.0.0.1,DNS:scheduler"
for extra in "$@"; do SAN="$SAN,$extra"; done

mkdir -p "$OUT"
umask 077
openssl req -x509 -newkey rsa:3072 -sha256 -nodes -days "$DAYS" \
    -subj "/CN=dmargin dask CA" -keyout "$OUT/ca-key.pem" -out "$OUT/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
openssl req -newkey rsa:3072 -sha256 -nodes -subj "/CN=dmargin dask node" \
    -keyout "$OUT/node-key.pem" -out "$OUT/node.csr" 2>/dev/null
# Scheduler, workers and clients are both TLS servers and TLS clients.
printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=%s\n' \
    "$SAN" > "$OUT/node.ext"
openssl x509 -req -sha256 -days "$DAYS" -in "$OUT/node.csr" -CA "$OUT/ca.pem" \
    -CAkey "$OUT/ca-key.pem" -CAcreateserial -extfile "$OUT/node.ext" -out "$OUT/node.pem" \
    2>/dev/null
rm -f "$OUT/node.csr" "$OUT/node.ext" "$OUT/ca.srl"
chmod 644 "$OUT/ca.pem" "$OUT/node.pem"
echo "wrote $OUT/ca.pem $OUT/node.pem $OUT/node-key.pem (keep ca-key.pem offline)"
