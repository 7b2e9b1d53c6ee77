// SPDX-License-Identifier: GPL-2.0
/*
 * xdppass: attach an XDP program that returns XDP_PASS (or, with -d,
 * XDP_DROP) to IFNAME in native (driver) mode (or, with -g, generic skb
 * mode), through a bpf link, and keep it attached until SIGTERM or
 * SIGINT. No clang or libbpf: the program is two instructions
 * (r0 = XDP_PASS or XDP_DROP; exit), loaded with the bpf() syscall.
 *
 * On veth this enables the XDP receive path, which copies every skb it
 * cannot run XDP on in place into the receive queue's page_pool
 * (veth_convert_skb_to_xdp_buff, drivers/net/veth.c), so the skbs going
 * up the stack are page-pool skbs.
 *
 * -d -g is the 2023 page_pool RFC's benchmark case, XDP_DROP in skb mode:
 * every packet dies inside the receiving NAPI poll, its page-pool page
 * freed there (generic XDP copies a page-pool skb that lacks headroom into
 * a new head first, freeing the page).
 *
 *   xdppass [-d] [-g] IFNAME  prints "xdppass: attached to IFNAME" once live
 */
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <net/if.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bpfsys.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void on_signal(int sig)
{
	(void)sig;
	_exit(0);
}

int main(int argc, char **argv)
{
	struct bpf_insn prog[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0,
		  .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	uint32_t mode = XDP_FLAGS_DRV_MODE;
	static char log[4096];
	union bpf_attr attr;
	unsigned int ifindex;
	const char *ifname;
	int opt, pfd, lfd;

	while ((opt = getopt(argc, argv, "dg")) != -1) {
		switch (opt) {
		case 'd':
			prog[0].imm = XDP_DROP;
			break;
		case 'g':
			mode = XDP_FLAGS_SKB_MODE;
			break;
		default:
			optind = argc + 1;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: %s [-d] [-g] IFNAME\n", argv[0]);
		return 2;
	}
	ifname = argv[optind];
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		fprintf(stderr, "xdppass: no interface %s\n", ifname);
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_XDP;
	pfd = bpf_prog_load(&attr, prog, ARRAY_SIZE(prog), log, sizeof(log));
	if (pfd < 0) {
		perror("xdppass: BPF_PROG_LOAD");
		fprintf(stderr, "%s\n", log);
		return 1;
	}
	memset(&attr, 0, sizeof(attr));
	attr.link_create.prog_fd = pfd;
	attr.link_create.target_ifindex = ifindex;
	attr.link_create.attach_type = BPF_XDP;
	attr.link_create.flags = mode;
	lfd = bpf(BPF_LINK_CREATE, &attr);
	if (lfd < 0) {
		perror(mode == XDP_FLAGS_SKB_MODE ?
		       "xdppass: BPF_LINK_CREATE (generic XDP)" :
		       "xdppass: BPF_LINK_CREATE (native XDP)");
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	printf("xdppass: attached to %s\n", ifname);
	fflush(stdout);
	for (;;)
		pause();
}
