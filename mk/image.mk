# SPDX-License-Identifier: Apache-2.0
#
# make image: the sandbox-app-runtime Incus image (image-build/build.sh; image-build/README.md).
#   make image [IMAGE_PROFILE=minimal|full] [IMAGE_VARIANT=gpu] [IMAGE_ARGS=--with-chromium]
#              [IMAGE_OUT=build-image]
# The guest package comes from `make deb` (the static binary). Runs as root.

IMAGE_PROFILE ?= full
IMAGE_VARIANT ?= default
IMAGE_OUT ?= build-image
IMAGE_ARGS ?=

.PHONY: image

image: deb
	image-build/build.sh --profile $(IMAGE_PROFILE) --variant $(IMAGE_VARIANT) \
		--deb $(DEB_GUEST) --out $(IMAGE_OUT) $(IMAGE_ARGS)

# make test-image: the minimal image's root booted with systemd in qemu (software emulation);
# the host's sandbox-ctl reaches the packaged agent over virtio-serial (image-build/README.md).
.PHONY: test-image
test-image: all deb
	image-build/test-image.sh
