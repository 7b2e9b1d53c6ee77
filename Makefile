# SPDX-License-Identifier: GPL-2.0
# ppcoal: `make` builds the module and the test modules for KDIR,
# `make module` builds ppcoal.ko alone (what dkms runs).
KVER ?= $(shell uname -r)
KDIR ?= /lib/modules/$(KVER)/build

all:
	$(MAKE) -C $(KDIR) M=$(CURDIR) PPCOAL_TEST_MODULES=1 modules

module:
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

clean:
	$(MAKE) -C $(KDIR) M=$(CURDIR) PPCOAL_TEST_MODULES=$(if $(wildcard tests/modules),1) clean

.PHONY: all module clean

# The VM demo: Debian 12's stock kernel in QEMU, ppcoal built by dkms.
demo:
	scripts/ppcoal-demo

.PHONY: demo

# ppcoal-dkms_VERSION_all.deb in this directory (needs debhelper);
# built from a copy of the tracked files, so the tree stays clean.
deb:
	scripts/ppcoal-mkdeb $(CURDIR)

.PHONY: deb
