# Sourced by the lean-stack bench scripts (not run alone): the veth pair
# between two private network namespaces they all measure across.
# Addresses, where given, come from RFC 2544's benchmark range and live
# only inside the namespaces: nothing leaves the machine.

# veth_pair_up NS_A NS_B [ADDR_A ADDR_B]: the namespaces, veth-a in NS_A
# joined to veth-b in NS_B, both up (with lo, and the /30 addresses when
# given); sets MAC_B, veth-b's hardware address, for the packet probes.
veth_pair_up() {
  local a=$1 b=$2
  ip netns add "$a"
  ip netns add "$b"
  ip link add veth-a netns "$a" type veth peer name veth-b netns "$b"
  if [ $# -ge 4 ]; then
    ip -n "$a" addr add "$3/30" dev veth-a
    ip -n "$b" addr add "$4/30" dev veth-b
    for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
  fi
  ip -n "$a" link set veth-a up
  ip -n "$b" link set veth-b up
  MAC_B=$(ip netns exec "$b" cat /sys/class/net/veth-b/address)
}

# veth_pair_down NS_A NS_B: removes both namespaces (and so the pair);
# quiet when they are already gone, as in a cleanup trap.
veth_pair_down() {
  ip netns del "$1" 2>/dev/null || true
  ip netns del "$2" 2>/dev/null || true
}
