"""The e2e tests' no-TCP check (tests/procnet.py) sees a socket when there is one: a
listening loopback socket and a UDP socket of this test's own process."""
from __future__ import annotations

import os
import socket

import procnet


def test_a_listening_tcp_socket_and_a_udp_socket_are_seen():
    me = os.getpid()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as tcp, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        tcp.bind(("127.0.0.1", 0))
        assert not (procnet.socket_inodes(me) & procnet.inet_inodes(me, listening_only=True))
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        held = procnet.socket_inodes(me)
        assert len(held & procnet.inet_inodes(me, listening_only=True)) == 1  # the listening one
        assert len(held & procnet.inet_inodes(me)) == 2                       # and the UDP one


def test_a_process_that_is_gone_holds_nothing():
    assert procnet.socket_inodes(2 ** 22 + 1) == set()  # above pid_max's largest value
