#!/usr/bin/env bash
# A private CA and one certificate + key per role (scheduler, worker, client),
# all signed by that CA.  For a test or a closed network; with an
# organisation's CA, have it sign the three role requests instead.
#   deploy/tls/make-certs.sh OUT_DIR [extra scheduler SAN entries, e.g. DNS:scheduler.example.org IP:10.0.0.5]
# Writes
#   OUT_DIR/scheduler/{ca.pem,scheduler.pem,scheduler-key.pem}   mount on the scheduler only
#   OUT_DIR/worker/{ca.pem,worker.pem,worker-key.pem}            mount on the workers only
#   OUT_DIR/client/{ca.pem,client.pem,client-key.pem}            give to the clients only
#   $CA_DIR/{ca.pem,ca-key.pem}   (default OUT_DIR/ca-private, mode 700): the CA's key,
#                                 never mounted anywhere; keep it offline
# Private keys are mode 600.  Run it again to issue new role keys from the same
# CA (it reuses $CA_DIR/ca-key.pem when present).
set -euo pipefail
OUT=${1:?usage: make-certs.sh OUT_DIR [SAN ...]}
shift
DAYS=${DAYS:-365}
CA_DIR=${CA_DIR:-$OUT/ca-private}
SCHED_SAN="DNS:localhost,IP:127.0.0.1,DNS:scheduler"
for extra in "$@"; do SCHED_SAN="$SCHED_SAN,$extra"; done

umask 077
mkdir -p "$OUT" "$CA_DIR"
chmod 700 "$CA_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
EC=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1)

if [ ! -s "$CA_DIR/ca-key.pem" ]; then
    openssl req -x509 "${EC[@]}" -sha256 -nodes -days "$((DAYS * 5))" \
        -subj "/CN=dmargin dask CA" -keyout "$CA_DIR/ca-key.pem" -out "$CA_DIR/ca.pem" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
fi
chmod 600 "$CA_DIR/ca-key.pem"
chmod 644 "$CA_DIR/ca.pem"

# issue ROLE EXTENDED_KEY_USAGE SUBJECT_ALT_NAMES
issue() {
    local role=$1 eku=$2 san=$3 dir="$OUT/$1"
    mkdir -p "$dir"
    chmod 755 "$dir"
    openssl req "${EC[@]}" -sha256 -nodes -subj "/CN=dmargin dask $role" \
        -keyout "$tmp/$role-key.pem" -out "$tmp/$role.csr" 2>/dev/null
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature"
        echo "extendedKeyUsage=$eku"
        echo "subjectAltName=$san"
    } > "$tmp/$role.ext"
    openssl x509 -req -sha256 -days "$DAYS" -in "$tmp/$role.csr" -CA "$CA_DIR/ca.pem" \
        -CAkey "$CA_DIR/ca-key.pem" -set_serial "0x$(openssl rand -hex 16)" \
        -extfile "$tmp/$role.ext" -out "$tmp/$role.pem" 2>/dev/null
    install -m 600 "$tmp/$role-key.pem" "$dir/$role-key.pem"
    install -m 644 "$tmp/$role.pem" "$dir/$role.pem"
    install -m 644 "$CA_DIR/ca.pem" "$dir/ca.pem"
}

# The scheduler and the workers accept connections and make them (to each
# other); a client only connects, so its certificate cannot serve as either.
issue scheduler serverAuth,clientAuth "$SCHED_SAN"
issue worker serverAuth,clientAuth "DNS:localhost,IP:127.0.0.1,DNS:worker"
issue client clientAuth "DNS:client"
echo "wrote $OUT/scheduler, $OUT/worker, $OUT/client; the CA key is in $CA_DIR: keep it offline"
