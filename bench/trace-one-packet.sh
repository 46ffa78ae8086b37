#!/bin/sh
# The alternative a user has today, for bench/run.mjs: load a node's iptables dump into a fresh
# network namespace with iptables-nft-restore, turn on nftrace for new packets in a raw-priority
# chain, and trace ONE packet sent from a client namespace over a veth pair with
# `nft monitor trace`. nft monitor reads the whole ruleset before it prints anything, so the packet
# is sent again every half second until its first trace line appears. Prints one JSON line with
# the milliseconds of each step. Needs root, ip, nft, iptables-nft-restore and python3.
#
#   sh bench/trace-one-packet.sh NAMESPACE-PREFIX DUMP DST-ADDRESS DST-PORT [TIMEOUT-SECONDS]

set -eu
prefix=$1 dump=$2 dst=$3 dport=$4 timeout=${5:-300}
node_ns="$prefix-node"
client_ns="$prefix-client"
out=$(mktemp)
monitor=
cleanup() {
  [ -n "$monitor" ] && kill "$monitor" 2>/dev/null
  ip netns del "$node_ns" 2>/dev/null || true
  ip netns del "$client_ns" 2>/dev/null || true
  rm -f "$out"
}
trap cleanup EXIT INT TERM
ms() { echo $(( $(date +%s%N) / 1000000 )); }

start=$(ms)
ip netns add "$node_ns"
ip netns add "$client_ns"
ip link add veth-node netns "$node_ns" type veth peer name veth-client netns "$client_ns"
ip -n "$node_ns" addr add 192.168.0.2/24 dev veth-node
ip -n "$node_ns" link set veth-node up
ip -n "$node_ns" link set lo up
ip -n "$client_ns" addr add 192.168.0.9/24 dev veth-client
ip -n "$client_ns" link set veth-client up
ip -n "$client_ns" route add default via 192.168.0.2
ip netns exec "$node_ns" sysctl -qw net.ipv4.ip_forward=1
setup=$(ms)

ip netns exec "$node_ns" iptables-nft-restore < "$dump"
loaded=$(ms)

ip netns exec "$node_ns" nft -f - <<NFT
table ip nftsim-trace {
  chain prerouting { type filter hook prerouting priority raw; meta nftrace set 1; }
}
NFT
ip netns exec "$node_ns" nft monitor trace > "$out" &
monitor=$!
while [ ! -s "$out" ]; do
  [ $(( $(ms) - loaded )) -lt $(( timeout * 1000 )) ] || { echo "{\"failure\":\"no trace line within ${timeout} s\"}"; exit 0; }
  ip netns exec "$client_ns" python3 -c "
import socket
s = socket.socket()
s.setblocking(False)
s.connect_ex(('$dst', $dport))
" || true
  sleep 0.5
done
first=$(ms)
sleep 1
lines=$(wc -l < "$out")
echo "{\"setupMs\":$((setup - start)),\"restoreMs\":$((loaded - setup)),\"firstTraceMs\":$((first - loaded)),\"totalMs\":$((first - start)),\"traceLines\":$lines}"
