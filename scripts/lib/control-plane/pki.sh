# shellcheck shell=bash
# Sourced by scripts/control-plane: the cluster's certificates and kubeconfigs.
# Uses its constants and helpers (PKI_DIR; fail).

openssl_quiet() {
  local output
  output=$(openssl "$@" 2>&1) || { printf '%s\n' "$output" >&2; fail "openssl $1 failed"; }
}

new_key() { openssl_quiet genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }

new_ca() {
  local name=$1 subject=$2
  new_key "$PKI_DIR/$name.key"
  openssl_quiet req -x509 -new -key "$PKI_DIR/$name.key" -subj "$subject" -days 3650 -sha256 \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
    -out "$PKI_DIR/$name.crt"
}

# sign NAME SUBJECT EXTENSIONS [CA]: a key and a certificate signed by CA
# (default: ca, the cluster CA).
sign() {
  local name=$1 subject=$2 extensions=$3 ca=${4:-ca}
  new_key "$PKI_DIR/$name.key"
  openssl_quiet req -new -key "$PKI_DIR/$name.key" -subj "$subject" -out "$PKI_DIR/$name.csr"
  printf '%s\n' "$extensions" >"$PKI_DIR/$name.ext"
  openssl_quiet x509 -req -in "$PKI_DIR/$name.csr" -CA "$PKI_DIR/$ca.crt" -CAkey "$PKI_DIR/$ca.key" \
    -CAcreateserial -days 3650 -sha256 -extfile "$PKI_DIR/$name.ext" -out "$PKI_DIR/$name.crt"
  rm -f "$PKI_DIR/$name.csr" "$PKI_DIR/$name.ext"
}

generate_pki() {
  mkdir -p "$PKI_DIR"
  # One CA signs the serving certificate and every client certificate; the
  # apiserver trusts it for client authentication.
  new_ca ca "/CN=applyset-test-ca"
  sign kube-apiserver "/CN=kube-apiserver" "$(printf '%s\n' \
    "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" \
    "extendedKeyUsage=serverAuth" \
    "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local")"
  local client_extensions
  client_extensions=$(printf '%s\n' "basicConstraints=critical,CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=clientAuth")
  # O=system:masters is bound to cluster-admin by RBAC's bootstrap policy.
  sign admin "/O=system:masters/CN=applyset-admin" "$client_extensions"
  # The user name RBAC's bootstrap policy grants the controller-manager's rights to.
  sign kube-controller-manager "/CN=system:kube-controller-manager" "$client_extensions"
  # Likewise for the scheduler (system:kube-scheduler and system:volume-scheduler).
  sign kube-scheduler "/CN=system:kube-scheduler" "$client_extensions"
  # kwok patches the status of Nodes and Pods, deletes Pods, renews Leases: an
  # administrator, under its own name (audit log: user kwok-controller).
  sign kwok "/O=system:masters/CN=kwok-controller" "$client_extensions"
  # The aggregation layer's front proxy, with its own CA as in kubeadm's
  # clusters; without it every delegating server (the controller-manager's
  # own endpoint included) keeps logging the missing request-header CA.
  new_ca front-proxy-ca "/CN=applyset-test-front-proxy-ca"
  sign front-proxy-client "/CN=front-proxy-client" "$client_extensions" front-proxy-ca
  # Signs ServiceAccount tokens (apiserver) and is shared with the
  # controller-manager, as in a normal cluster.
  openssl_quiet genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI_DIR/service-account.key"
  openssl_quiet pkey -in "$PKI_DIR/service-account.key" -pubout -out "$PKI_DIR/service-account.pub"
}

write_kubeconfig() {
  local path=$1 user=$2 server=$3
  cat >"$path" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: applyset-test
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$PKI_DIR/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 "$PKI_DIR/$user.crt")
    client-key-data: $(base64 -w0 "$PKI_DIR/$user.key")
contexts:
- name: applyset-test
  context:
    cluster: applyset-test
    user: $user
current-context: applyset-test
EOF
  chmod 600 "$path"
}
