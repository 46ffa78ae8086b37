#!/usr/bin/env bash
# Regenerates the folders of corpus/real/: small rulesets loaded into a real kernel with the real
# tools (iptables-nft-restore, nft), then listed back by them. Each folder gets a NOTES.md saying
# how it was made, with the tool versions.
#
# Needs root (network namespaces), nft, iptables-nft, ip6tables-nft, node (for the kube-proxy
# generator) and ipset (calico-ipip only; skipped without it).
#
#   sudo corpus/real/make.sh                 # every folder
#   sudo corpus/real/make.sh docker-bridge   # only the named ones
#
# Each ruleset is loaded into its own throwaway namespace, "$NFTSIM_NETNS_PREFIX-<pid>"
# (default prefix nftsim-corpus), deleted afterwards.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
NS="${NFTSIM_NETNS_PREFIX:-nftsim-corpus}-$$"

if [ "$(id -u)" -ne 0 ]; then
  echo "make.sh: needs root to create network namespaces" >&2
  exit 2
fi
for tool in ip nft iptables-nft-restore iptables-nft-save ip6tables-nft-restore ip6tables-nft-save node; do
  command -v "$tool" >/dev/null || { echo "make.sh: $tool not found" >&2; exit 2; }
done

delete_ns() { ip netns del "$NS" 2>/dev/null || true; }
trap delete_ns EXIT
fresh_ns() { delete_ns; ip netns add "$NS"; }
in_ns() { ip netns exec "$NS" "$@"; }

# The nft listings every folder has. nft's "managed by iptables-nft" warnings go to stderr and
# are not kept.
list_nft() {
  in_ns nft list ruleset >"$1/ruleset.nft" 2>/dev/null
  in_ns nft -a list ruleset >"$1/ruleset-handles.nft" 2>/dev/null
  in_ns nft -j list ruleset >"$1/ruleset.json" 2>/dev/null
}

# iptables-nft-save's stdout, and stderr when it says anything; its exit status goes into
# SAVE_NOTES for NOTES.md. A table it cannot read is a comment on stdout, or a message on
# stderr, depending on the case and the version.
SAVE_NOTES=''
save_iptables() { # dir name binary
  local status=0
  in_ns "$3" >"$1/$2.save" 2>"$1/$2-save.stderr" || status=$?
  SAVE_NOTES+="- \`$3\` exited with status $status"
  if [ -s "$1/$2-save.stderr" ]; then
    SAVE_NOTES+=", stderr in \`$2-save.stderr\`."$'\n'
  else
    SAVE_NOTES+=" and wrote nothing on stderr."$'\n'
    rm -f "$1/$2-save.stderr"
  fi
}

versions() {
  cat <<EOF
- $(nft --version)
- $(iptables-nft --version)
- $(ip6tables-nft --version)
$(command -v ipset >/dev/null && echo "- $(ipset --version)")
- kernel $(uname -r), $(. /etc/os-release && echo "$PRETTY_NAME")
- node $(node --version)
- made $(date -u +%Y-%m-%d) by corpus/real/make.sh
EOF
}

FILES_TEXT='- `iptables.save`: `iptables-nft-save`.
- `ruleset.nft`: `nft list ruleset`.
- `ruleset-handles.nft`: `nft -a list ruleset`.
- `ruleset.json`: `nft -j list ruleset`.'

make_kube_proxy() {
  local dir="$HERE/kube-proxy-5svc"
  mkdir -p "$dir"
  node "$ROOT/bench/gen/kube-proxy-dump.mjs" --services 5 --endpoints 3 --seed 1 >"$dir/input.save"
  SAVE_NOTES=''
  fresh_ns
  in_ns iptables-nft-restore <"$dir/input.save"
  save_iptables "$dir" iptables iptables-nft-save
  list_nft "$dir"
  cat >"$dir/NOTES.md" <<EOF
# kube-proxy (iptables mode), 5 services × 3 endpoints

\`input.save\` is generated, in the shape kube-proxy 1.28+ writes in iptables mode (see
bench/gen/kube-proxy-dump.mjs): NodePort with ClientIP affinity, LoadBalancer with
externalTrafficPolicy Local and LoadBalancerSourceRanges, services without endpoints, the
KUBE-FIREWALL / KUBE-FORWARD / KUBE-PROXY-FIREWALL chains, masquerade mark 0x4000. Everything
else was made by the real tools from it, in a fresh network namespace:

    node bench/gen/kube-proxy-dump.mjs --services 5 --endpoints 3 --seed 1 > input.save
    ip netns exec NS iptables-nft-restore < input.save
    ip netns exec NS iptables-nft-save > iptables.save
    ip netns exec NS nft list ruleset > ruleset.nft
    ip netns exec NS nft -a list ruleset > ruleset-handles.nft
    ip netns exec NS nft -j list ruleset > ruleset.json

$FILES_TEXT

\`iptables.save\` equals \`input.save\` apart from the \`#\` lines. The nft listing is lossy, as on a
real node: comments print as nothing, \`-m recent\` as \`xt match recent\`, and
\`! --ctstate RELATED,ESTABLISHED,DNAT\` as \`ct status dnat\`.

$SAVE_NOTES
Tools:

$(versions)
EOF
}

make_docker() {
  local dir="$HERE/docker-bridge"
  SAVE_NOTES=''
  fresh_ns
  in_ns iptables-nft-restore <"$dir/input.save"
  save_iptables "$dir" iptables iptables-nft-save
  list_nft "$dir"
  cat >"$dir/NOTES.md" <<EOF
# Docker bridge networking (iptables-nft)

\`input.save\` is hand-written in the shape Docker Engine 24–27 writes through iptables-nft:
the default bridge \`docker0\` (172.17.0.0/16) with a container publishing 8080→80, a user
network \`br-5f3a9c1e2d4b\` (172.18.0.0/16) with a container published on 127.0.0.1:5432, the
DOCKER, DOCKER-USER and DOCKER-ISOLATION-STAGE-1/2 chains and FORWARD policy DROP. It was not
captured from a running dockerd. Everything else was made by the real tools from it, in a fresh
network namespace:

    ip netns exec NS iptables-nft-restore < input.save
    ip netns exec NS iptables-nft-save > iptables.save
    ip netns exec NS nft list ruleset > ruleset.nft
    ip netns exec NS nft -a list ruleset > ruleset-handles.nft
    ip netns exec NS nft -j list ruleset > ruleset.json

$FILES_TEXT

$SAVE_NOTES
Tools:

$(versions)
EOF
}

make_calico() {
  local dir="$HERE/calico-ipip"
  if ! command -v ipset >/dev/null; then
    echo "make.sh: ipset not found, calico-ipip skipped" >&2
    return
  fi
  SAVE_NOTES=''
  fresh_ns
  in_ns ipset restore <"$dir/ipset.save"
  in_ns iptables-nft-restore <"$dir/input.save"
  save_iptables "$dir" iptables iptables-nft-save
  list_nft "$dir"
  cat >"$dir/NOTES.md" <<EOF
# Calico (felix, iptables dataplane, IP-in-IP)

\`input.save\` and \`ipset.save\` are hand-written in the shape Calico felix 3.2x writes in
iptables mode: raw/mangle/filter/nat \`cali-*\` chains, one workload interface
\`cali7e0c1c3a2f1\` with its from/to chains and namespace profile, the mark bits of the default
mask 0xffff0000 (accept 0x10000, scratch 0x40000…), rpfilter, IP-in-IP and nat-outgoing through
ipsets. The \`cali:\` rule ids are made up (felix hashes its rules); it was not captured from a
running felix. Everything else was made by the real tools from it, in a fresh network namespace:

    ip netns exec NS ipset restore < ipset.save
    ip netns exec NS iptables-nft-restore < input.save
    ip netns exec NS iptables-nft-save > iptables.save
    ip netns exec NS nft list ruleset > ruleset.nft
    ip netns exec NS nft -a list ruleset > ruleset-handles.nft
    ip netns exec NS nft -j list ruleset > ruleset.json

$FILES_TEXT

The nft listing shows what iptables-nft cannot translate for nft: \`-m set\` prints as
\`xt match set\`, \`-m rpfilter\` as \`xt match rpfilter\`, comments as nothing.

$SAVE_NOTES
Tools:

$(versions)
EOF
}

# The incident of ../shared/DESIGN.md: a VPN agent appends native nft rules to the tables
# kube-proxy manages through iptables-nft, in both families; iptables-nft-save then refuses the
# table, so every kube-proxy sync fails.
make_netbird_incident() {
  local dir="$HERE/kube-proxy-wt0-native-rules"
  mkdir -p "$dir"
  node "$ROOT/bench/gen/kube-proxy-dump.mjs" --services 5 --endpoints 3 --seed 1 >"$dir/input.save"
  # kube-proxy's IPv6 proxier writes the same fixed filter rules (no services here).
  cat >"$dir/input6.save" <<'EOF'
*filter
:INPUT ACCEPT [0:0]
:FORWARD ACCEPT [0:0]
:OUTPUT ACCEPT [0:0]
:KUBE-EXTERNAL-SERVICES - [0:0]
:KUBE-FORWARD - [0:0]
:KUBE-NODEPORTS - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SERVICES - [0:0]
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x4000/0x4000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
COMMIT
EOF
  cat >"$dir/native.sh" <<'EOF'
nft add rule ip filter FORWARD iifname "wt0" accept
nft add rule ip filter FORWARD oifname "wt0" ct state established,related accept
nft add rule ip6 filter FORWARD iifname "wt0" accept
nft add rule ip6 filter FORWARD oifname "wt0" ct state established,related accept
EOF
  SAVE_NOTES=''
  fresh_ns
  in_ns iptables-nft-restore <"$dir/input.save"
  in_ns ip6tables-nft-restore <"$dir/input6.save"
  in_ns bash -e "$dir/native.sh"
  save_iptables "$dir" iptables iptables-nft-save
  save_iptables "$dir" ip6tables ip6tables-nft-save
  list_nft "$dir"
  cat >"$dir/NOTES.md" <<EOF
# kube-proxy tables with a VPN agent's native rules (the wt0 incident)

The incident of DESIGN.md: a VPN agent (Netbird) appends native nft rules for its interface
\`wt0\` to chain FORWARD of \`table ip filter\` and \`table ip6 filter\`, tables kube-proxy
manages through iptables-nft. iptables-nft cannot translate \`ct state\` back, so
\`iptables-nft-save\` skips the table with \`\`# Table \`filter' is incompatible, use 'nft' tool.\`\`
and kube-proxy's syncs fail.

\`input.save\` is the generated kube-proxy dump of ../kube-proxy-5svc, \`input6.save\` the fixed
filter rules kube-proxy's IPv6 proxier writes (hand-written, no services), \`native.sh\` the nft
commands the agent runs. Made in a fresh network namespace:

    node bench/gen/kube-proxy-dump.mjs --services 5 --endpoints 3 --seed 1 > input.save
    ip netns exec NS iptables-nft-restore < input.save
    ip netns exec NS ip6tables-nft-restore < input6.save
    ip netns exec NS bash -e native.sh
    ip netns exec NS iptables-nft-save > iptables.save 2> iptables-save.stderr
    ip netns exec NS ip6tables-nft-save > ip6tables.save 2> ip6tables-save.stderr
    ip netns exec NS nft list ruleset > ruleset.nft
    ip netns exec NS nft -a list ruleset > ruleset-handles.nft
    ip netns exec NS nft -j list ruleset > ruleset.json

$FILES_TEXT
- \`ip6tables.save\`: \`ip6tables-nft-save\`.

The fix is deleting the agent's rules by handle (see \`ruleset-handles.nft\`), in both families.

$SAVE_NOTES
Tools:

$(versions)
EOF
}

ALL=(kube-proxy-5svc docker-bridge calico-ipip kube-proxy-wt0-native-rules)
if [ $# -eq 0 ]; then set -- "${ALL[@]}"; fi
for name in "$@"; do
  case "$name" in
    kube-proxy-5svc) make_kube_proxy ;;
    docker-bridge) make_docker ;;
    calico-ipip) make_calico ;;
    kube-proxy-wt0-native-rules) make_netbird_incident ;;
    *) echo "make.sh: unknown folder $name (known: ${ALL[*]})" >&2; exit 2 ;;
  esac
  echo "made corpus/real/$name"
done
