// SPDX-License-Identifier: GPL-2.0
/*
 * pptap: a plain AF_PACKET/ETH_P_ALL socket bound to one interface that
 * drains what it receives, the way NetworkManager's packet socket does.
 * Unlike TPACKET_V3 (which copies into its ring), packet_rcv() clones
 * every received skb for such a socket, so the stack sees cloned skbs.
 *
 *   pptap IFNAME [SECONDS]      (0 or nothing: until SIGINT/SIGTERM)
 *
 * Prints "pptap: IFNAME packets N bytes B" on exit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	unsigned long long packets = 0, bytes = 0;
	static char buf[65536];
	time_t end = 0;
	sigset_t sigs;
	int fd, sfd;

	if (argc < 2) {
		fprintf(stderr, "usage: %s IFNAME [SECONDS]\n", argv[0]);
		return 2;
	}
	if (argc > 2 && atoi(argv[2]) > 0)
		end = time(NULL) + atoi(argv[2]);
	/* SIGINT/SIGTERM arrive on a descriptor: the loop ends and reports */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sfd = signalfd(-1, &sigs, 0);
	if (sfd < 0) {
		perror("pptap: signalfd");
		return 1;
	}

	fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (fd < 0) {
		perror("pptap: socket(AF_PACKET)");
		return 1;
	}
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = if_nametoindex(argv[1]);
	if (!sll.sll_ifindex) {
		fprintf(stderr, "pptap: no interface %s\n", argv[1]);
		return 1;
	}
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("pptap: bind");
		return 1;
	}
	printf("pptap: listening on %s\n", argv[1]);
	fflush(stdout);
	while (!end || time(NULL) < end) {
		struct pollfd p[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
		};
		ssize_t n;

		if (poll(p, 2, 200) <= 0)
			continue;
		if (p[1].revents)
			break;
		n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			perror("pptap: recv");
			break;
		}
		packets++;
		bytes += (unsigned long long)n;
	}
	printf("pptap: %s packets %llu bytes %llu\n", argv[1], packets, bytes);
	return 0;
}
