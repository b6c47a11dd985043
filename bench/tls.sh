# Shared by the benchmarks with a loopback HTTPS fake (stripe_fake.sh, outcomes.sh): a
# throw-away CA and a `localhost` certificate it signed, in $TLS (ca.pem, leaf.pem, leaf.key),
# the CA given to the server as CHURN_EXTRA_CA_FILE; CHURN_WEBHOOK_ALLOW_PRIVATE lets its
# outbound calls reach loopback. Source it after common.sh; $TLS goes on exit.
command -v openssl >/dev/null || { echo "openssl is required" >&2; exit 1; }
TLS=$(mktemp -d)
trap 'rm -rf "$TLS"; [ -n "${FAKE:-}" ] && kill "$FAKE" 2>/dev/null || true' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=bench CA" -keyout "$TLS/ca.key" -out "$TLS/ca.pem" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout "$TLS/leaf.key" -out "$TLS/leaf.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' >"$TLS/ext"
openssl x509 -req -in "$TLS/leaf.csr" -CA "$TLS/ca.pem" -CAkey "$TLS/ca.key" -CAcreateserial -days 2 \
  -extfile "$TLS/ext" -out "$TLS/leaf.pem" 2>/dev/null
export CHURN_WEBHOOK_ALLOW_PRIVATE=true CHURN_EXTRA_CA_FILE="$TLS/ca.pem"
