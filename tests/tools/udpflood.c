// SPDX-License-Identifier: GPL-2.0
/*
 * udpflood: send small UDP datagrams to ADDR:PORT as fast as one thread
 * can for SECONDS, as the 2021 page_to_skb measurement did (to a port
 * nobody listens on: the receiver counts and drops).
 *
 *   udpflood ADDR PORT SECONDS [PAYLOAD_BYTES [mark|nomark [GAP_US]]]
 *
 * Prints "udpflood: sent N datagrams". With "mark" it executes the marker
 * of the insncount QEMU plugin (tests/tools/insnmark.c) right before the
 * first datagram and right after the last, so that an instruction window
 * holds the flood and not the start and exit of this process. With
 * GAP_US it sleeps that long after each datagram: a paced stream, where
 * each datagram is received on its own (an interrupt and a NAPI poll
 * each), so that a count per datagram does not depend on how the
 * receiver happened to batch them.
 *
 * A send waits while the socket's send buffer is full, as before, but for
 * at most a second (SO_SNDTIMEO). After STALL_SECS such timeouts in a row
 * the transmit path has stopped (the device completes nothing): udpflood
 * exits 3 saying so rather than block its caller for good. Other send
 * errors (ECONNREFUSED after the peer's port unreachable) are not counted
 * as sent and do not stop the flood.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>

#define STALL_SECS 10

int main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	struct timeval one_sec = { .tv_sec = 1 };
	static char buf[1500];
	unsigned long long sent = 0;
	size_t len = 18;
	struct timespec gap = { 0 };
	time_t end;
	int fd, mark, blocked = 0, batch = 256;

	if (argc < 4) {
		fprintf(stderr, "usage: %s ADDR PORT SECONDS %s\n", argv[0],
			"[PAYLOAD_BYTES [mark|nomark [GAP_US]]]");
		return 2;
	}
	if (argc > 4)
		len = strtoul(argv[4], NULL, 0);
	if (len > sizeof(buf))
		len = sizeof(buf);
	if (inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "udpflood: bad address %s\n", argv[1]);
		return 2;
	}
	mark = argc > 5 && strcmp(argv[5], "mark") == 0;
	if (argc > 6) {
		long us = strtol(argv[6], NULL, 0);

		gap.tv_sec = us / 1000000;
		gap.tv_nsec = us % 1000000 * 1000;
		batch = 1;
	}
	to.sin_port = htons(atoi(argv[2]));
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &one_sec, sizeof(one_sec))) {
		perror("udpflood: socket");
		return 1;
	}
	end = time(NULL) + atoi(argv[3]);
	if (mark)
		asm volatile("xchg %%bx, %%bx" ::: "memory");
	/* past the end only while the last batch timed out */
	while (time(NULL) < end || blocked) {
		unsigned long long before = sent;
		int i;

		for (i = 0; i < batch; i++)
			if (send(fd, buf, len, 0) >= 0)
				sent++;
			else if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
		if (batch == 1)
			nanosleep(&gap, NULL);
		/* ended by a timeout: count it, from 1 if a send got through */
		if (i == batch)
			blocked = 0;
		else
			blocked = sent == before ? blocked + 1 : 1;
		if (blocked >= STALL_SECS) {
			fprintf(stderr, "udpflood: %s for %d s (%llu sent before)\n",
				"the transmit path stalled: no send found room",
				blocked, sent);
			return 3;
		}
	}
	if (mark)
		asm volatile("xchg %%bx, %%bx" ::: "memory");
	printf("udpflood: sent %llu datagrams\n", sent);
	return 0;
}
