#!/usr/bin/env python3
# Packet I/O for the kernel-differential harness (kernel-harness.ts). One process per harness,
# started in the root namespace: it enters each namespace once (setns) to open its sockets there,
# so a case costs no process start. A socket keeps the namespace it was opened in.
#
# Protocol: one JSON object per line on stdin, one JSON reply per line on stdout
# ({"ok": true, ...} or {"ok": false, "error": "..."}). Operations:
#   open     {node, peers: [{ns, ifname, dstMac, srcMac}]}  open every socket
#   flush    {}                                             delete every conntrack entry in node
#   inject   {via, packet, sentinel, dst?, dstMac?, mark?, oif?, sentinelVia?}
#                                                           drain captures, send packet then sentinel
#                                                           (the packet to dstMac, else the node)
#   collect  {graceMs}                                      frames seen on the peers since inject
# `via` is a peer index (frame sent on the peer's veth, so it enters the node on the interface's
# other end) or -1 (sent from a raw socket inside the node: the output path).
import ctypes
import json
import os
import select
import socket
import struct
import sys
import time

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_MARK = 36
# ctnetlink: subsystem 1 (NFNL_SUBSYS_CTNETLINK), message 2 (IPCTNL_MSG_CT_DELETE); with no tuple
# attribute the kernel flushes the whole table (net/netfilter/nf_conntrack_netlink.c).
NETLINK_NETFILTER = 12
CT_DELETE = (1 << 8) | 2
NLM_F_REQUEST = 1
NLM_F_ACK = 4
NLMSG_ERROR = 2

libc = ctypes.CDLL(None, use_errno=True)


def enter(ns_path):
    fd = os.open(ns_path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f'setns {ns_path}: {os.strerror(err)}')
    finally:
        os.close(fd)


def mac_bytes(text):
    return bytes(int(part, 16) for part in text.split(':'))


class Agent:
    def __init__(self):
        self.home = '/proc/self/ns/net'
        self.home_fd = os.open(self.home, os.O_RDONLY)
        self.peers = []
        self.raw4 = self.raw6 = self.ctnl = None

    def open(self, node, peers):
        try:
            for peer in peers:
                enter(peer['ns'])
                sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                sock.bind((peer['ifname'], 0))
                sock.setblocking(False)
                header = mac_bytes(peer['dstMac']) + mac_bytes(peer['srcMac'])
                self.peers.append({'sock': sock, 'ifname': peer['ifname'], 'header': header})
            enter(node)
            self.raw4 = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
            self.raw6 = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_RAW)
            self.ctnl = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
            self.ctnl.bind((0, 0))
        finally:
            if libc.setns(self.home_fd, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), 'setns back to the root namespace')
        return {}

    def flush(self):
        seq = int(time.monotonic_ns() & 0x7FFFFFFF)
        # nlmsghdr + nfgenmsg (family AF_UNSPEC: every family, version 0, res_id 0)
        body = struct.pack('=BBH', socket.AF_UNSPEC, 0, 0)
        msg = struct.pack('=IHHII', 16 + len(body), CT_DELETE, NLM_F_REQUEST | NLM_F_ACK, seq, 0) + body
        self.ctnl.send(msg)
        while True:
            data = self.ctnl.recv(65536)
            length, kind, _flags, reply_seq, _pid = struct.unpack_from('=IHHII', data)
            if kind == NLMSG_ERROR and reply_seq == seq:
                (error,) = struct.unpack_from('=i', data, 16)
                # ENOENT: the table was already empty.
                if error not in (0, -2):
                    raise OSError(-error, f'conntrack flush: {os.strerror(-error)}')
                return {}

    def drain(self):
        for peer in self.peers:
            while True:
                try:
                    peer['sock'].recv(65536)
                except BlockingIOError:
                    break

    def send(self, via, packet, dst=None, mark=0, oif=None, dst_mac=None):
        if via >= 0:
            peer = self.peers[via]
            header = peer['header'] if dst_mac is None else mac_bytes(dst_mac) + peer['header'][6:]
            ethertype = b'\x08\x00' if packet[0] >> 4 == 4 else b'\x86\xdd'
            peer['sock'].send(header + ethertype + packet)
            return
        raw = self.raw4 if packet[0] >> 4 == 4 else self.raw6
        raw.setsockopt(socket.SOL_SOCKET, SO_MARK, mark)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, (oif or '').encode())
        try:
            raw.sendto(packet, (dst, 0))
        except PermissionError:
            pass  # netfilter dropped it on the output path: EPERM is that verdict, not a failure

    def inject(self, via, packet, sentinel, dst=None, dst_mac=None, mark=0, oif=None, sentinel_via=None):
        self.drain()
        self.send(via, bytes.fromhex(packet), dst, mark, oif, dst_mac)
        # The sentinel follows the same way in (or, after a local packet, in from a peer: it then
        # queues behind a packet the node sent to itself through lo, in the CPU's one backlog);
        # the harness knows the case packet has been handled once the sentinel's trace line arrives.
        sentinel_via = via if sentinel_via is None else sentinel_via
        self.send(sentinel_via, bytes.fromhex(sentinel), '127.0.0.1' if sentinel_via < 0 else None)
        return {}

    def collect(self, grace_ms):
        frames = []
        deadline = time.monotonic() + grace_ms / 1000
        socks = {peer['sock']: index for index, peer in enumerate(self.peers)}
        while True:
            timeout = deadline - time.monotonic()
            if timeout <= 0:
                break
            ready, _, _ = select.select(list(socks), [], [], timeout)
            for sock in ready:
                while True:
                    try:
                        data, address = sock.recvfrom(65536)
                    except BlockingIOError:
                        break
                    if address[2] == PACKET_OUTGOING:
                        continue
                    frames.append({'peer': socks[sock], 'hex': data.hex()})
        return {'frames': frames}


def main():
    # One CPU: both sends of an inject then land in one backlog queue, handled in order.
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    agent = Agent()
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop('op')
        try:
            if op == 'open':
                reply = agent.open(request['node'], request['peers'])
            elif op == 'flush':
                reply = agent.flush()
            elif op == 'inject':
                reply = agent.inject(request['via'], request['packet'], request['sentinel'],
                                     request.get('dst'), request.get('dstMac'), request.get('mark', 0),
                                     request.get('oif'), request.get('sentinelVia'))
            elif op == 'collect':
                reply = agent.collect(request['graceMs'])
            else:
                raise ValueError(f'unknown op {op}')
            reply['ok'] = True
        except Exception as error:  # every failure goes back to the harness, which throws
            reply = {'ok': False, 'error': f'{op}: {error}'}
        sys.stdout.write(json.dumps(reply) + '\n')
        sys.stdout.flush()


main()
