#!/usr/bin/env bash
# ldap.sh - a real OpenLDAP slapd (Debian 12 package) for the LDAP login tests,
# adapted from the team's tried recipe for slapd: installed with apt idempotently, run
# with its own slapd.conf and data under DIR (never the system service), plain
# LDAP (also used with StartTLS) and LDAPS with a throw-away CA made here.
#
#   base dn   dc=example,dc=org
#   admin     cn=admin,dc=example,dc=org              / admin-pass
#   users     uid=alice,ou=people,dc=example,dc=org   / alice-pass   (admins, developers)
#             uid=bob,ou=people,dc=example,dc=org     / bob-pass     (developers)
#             uid=carol,ou=people,dc=example,dc=org   / carol-pass   (no group)
#   groups    cn=admins,ou=groups,…      (groupOfNames) member: alice
#             cn=developers,ou=groups,…  (groupOfNames) member: alice, bob
#   the memberof overlay is on: user entries carry memberOf (ask for it by name).
#   TLS       DIR/ldap/tls/ca.pem signs the server certificate for 127.0.0.1 / localhost.
#
# usage: scripts/ldap.sh [install|start|stop|status|smoke] [DIR]
#   DIR (or $SERVICES_DIR) holds config and data; default .cache/services
#   env: LDAP_PORT (13389), LDAPS_PORT (13636)
# Start: < 1 s after the one-time apt install (~10 s). Stop: scripts/ldap.sh stop DIR.
set -euo pipefail

ACTION=${1:-start}
BASE=${2:-${SERVICES_DIR:-$(cd "$(dirname "$0")/.." && pwd)/.cache/services}}
mkdir -p "$BASE"; BASE=$(cd "$BASE" && pwd)
D=$BASE/ldap
PORT=${LDAP_PORT:-13389}
TLS_PORT=${LDAPS_PORT:-13636}
ADMIN_PASS=admin-pass
URI=ldap://127.0.0.1:$PORT
SUFFIX=dc=example,dc=org
ADMIN_DN=cn=admin,$SUFFIX
PIDF=$D/slapd.pid
SLAPD=/usr/sbin/slapd

running() { [ -s "$PIDF" ] && kill -0 "$(cat "$PIDF")" 2>/dev/null; }

install() {
  if [ -x "$SLAPD" ] && command -v ldapsearch >/dev/null && command -v openssl >/dev/null; then return 0; fi
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo 'slapd slapd/no_configuration boolean true' | $SUDO debconf-set-selections
  if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q slapd ldap-utils openssl >/dev/null 2>&1; then
    $SUDO apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q slapd ldap-utils openssl >/dev/null
  fi
}

certs() {
  local t=$D/tls
  [ -s "$t/server.pem" ] && return 0
  mkdir -p "$t"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=sluice test CA" \
    -keyout "$t/ca.key" -out "$t/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$t/server.key" -out "$t/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$t/ext.cnf"
  openssl x509 -req -in "$t/server.csr" -CA "$t/ca.pem" -CAkey "$t/ca.key" -CAcreateserial \
    -days 3650 -extfile "$t/ext.cnf" -out "$t/server.pem" 2>/dev/null
  # A second CA that signed nothing: a client trusting only it must refuse the server.
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=other CA" \
    -keyout "$t/other-ca.key" -out "$t/other-ca.pem" 2>/dev/null
}

configure() {
  mkdir -p "$D/data"
  certs
  local hash; hash=$(slappasswd -s "$ADMIN_PASS")
  cat > "$D/slapd.conf" <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
pidfile $PIDF
argsfile $D/slapd.args
loglevel stats
TLSCACertificateFile $D/tls/ca.pem
TLSCertificateFile $D/tls/server.pem
TLSCertificateKeyFile $D/tls/server.key

database mdb
maxsize 104857600
suffix "$SUFFIX"
rootdn "$ADMIN_DN"
rootpw $hash
directory $D/data
index objectClass eq
index uid,cn,member,memberOf eq
overlay memberof
access to attrs=userPassword by self write by anonymous auth by * none
access to * by * read
EOF
  slaptest -Q -u -f "$D/slapd.conf"
}

seed() {
  [ -f "$D/.seeded" ] && return 0
  local pa pb pc; pa=$(slappasswd -s alice-pass); pb=$(slappasswd -s bob-pass); pc=$(slappasswd -s carol-pass)
  cat > "$D/seed.ldif" <<EOF
dn: $SUFFIX
objectClass: top
objectClass: dcObject
objectClass: organization
o: Example Org
dc: example

dn: ou=people,$SUFFIX
objectClass: organizationalUnit
ou: people

dn: ou=groups,$SUFFIX
objectClass: organizationalUnit
ou: groups

dn: uid=alice,ou=people,$SUFFIX
objectClass: inetOrgPerson
uid: alice
cn: Alice Admin
sn: Admin
displayName: Alice Admin
mail: alice@example.org
userPassword: $pa

dn: uid=bob,ou=people,$SUFFIX
objectClass: inetOrgPerson
uid: bob
cn: Bob Builder
sn: Builder
mail: bob@example.org
userPassword: $pb

dn: uid=carol,ou=people,$SUFFIX
objectClass: inetOrgPerson
uid: carol
cn: Carol Nogroup
sn: Nogroup
userPassword: $pc

dn: cn=admins,ou=groups,$SUFFIX
objectClass: groupOfNames
cn: admins
member: uid=alice,ou=people,$SUFFIX

dn: cn=developers,ou=groups,$SUFFIX
objectClass: groupOfNames
cn: developers
member: uid=alice,ou=people,$SUFFIX
member: uid=bob,ou=people,$SUFFIX
EOF
  # Loaded through the server (not slapadd) so that the memberof overlay fills memberOf.
  ldapadd -x -H "$URI" -D "$ADMIN_DN" -w "$ADMIN_PASS" -f "$D/seed.ldif" >/dev/null
  touch "$D/.seeded"
}

start() {
  if running; then echo "slapd already running (pid $(cat "$PIDF")) on $URI"; return 0; fi
  install; configure
  "$SLAPD" -f "$D/slapd.conf" -h "$URI/ ldaps://127.0.0.1:$TLS_PORT/" > "$D/slapd.log" 2>&1
  for _ in $(seq 1 50); do
    ldapsearch -x -H "$URI" -s base -b "" namingContexts >/dev/null 2>&1 && break; sleep 0.1
  done
  running || { echo "slapd did not start"; cat "$D/slapd.log"; return 1; }
  seed
  echo "slapd up on $URI and ldaps://127.0.0.1:$TLS_PORT (pid $(cat "$PIDF")), base $SUFFIX, CA $D/tls/ca.pem"
}

stop() {
  if running; then
    local p; p=$(cat "$PIDF"); kill "$p"
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    echo "slapd stopped"
  fi
  rm -f "$PIDF"
}

smoke() {
  ldapsearch -x -LLL -H "$URI" -b "$SUFFIX" -D "$ADMIN_DN" -w "$ADMIN_PASS" '(objectClass=inetOrgPerson)' uid memberOf
  ldapwhoami -x -H "$URI" -D "uid=bob,ou=people,$SUFFIX" -w bob-pass
  LDAPTLS_CACERT=$D/tls/ca.pem ldapwhoami -x -ZZ -H "$URI" -D "uid=bob,ou=people,$SUFFIX" -w bob-pass
  LDAPTLS_CACERT=$D/tls/ca.pem ldapwhoami -x -H "ldaps://127.0.0.1:$TLS_PORT" -D "uid=bob,ou=people,$SUFFIX" -w bob-pass
  if ldapwhoami -x -H "$URI" -D "uid=bob,ou=people,$SUFFIX" -w wrong >/dev/null 2>&1; then
    echo "wrong password accepted!"; return 1; fi
  echo "ldap smoke OK"
}

case "$ACTION" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  status) if running; then echo "running pid $(cat "$PIDF")"; else echo "stopped"; exit 1; fi ;;
  smoke) smoke ;;
  *) echo "usage: $0 [install|start|stop|status|smoke] [DIR]"; exit 2 ;;
esac
