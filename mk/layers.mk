# SPDX-License-Identifier: Apache-2.0
#
# The layers (docs/hacking.md): each folder of sources is compiled with the include paths of
# the layers it may use and no others, so an #include that crosses a layer the wrong way does
# not compile. Read a line as "FOLDER may include: ...". A folder always sees its own headers.
#
# Layers lower in this list never include layers higher up; scripts/check-layers.py checks
# the include graph for cycles (make test runs it).

LAYER_common/base    :=
LAYER_common/scrub   := common/base
LAYER_common/channel := common/base
LAYER_common/git     := common/base
LAYER_guest/stage    := common/base common/git
LAYER_guest/proc     := common/base common/scrub
LAYER_guest/config   := common/base common/scrub guest/stage guest/proc
LAYER_guest/engine   := common/base common/scrub guest/stage guest/proc guest/config
LAYER_guest/confine  := common/base
LAYER_guest/session  := common/base common/scrub common/git guest/stage guest/proc guest/config \
	guest/confine
LAYER_guest/serve    := common/base common/scrub common/channel common/git guest/stage \
	guest/proc guest/config guest/engine guest/confine guest/session
LAYER_guest/init     := common/base
LAYER_guest/cli      := common/base common/scrub common/channel common/git guest/stage \
	guest/proc guest/config guest/engine guest/serve guest/init guest/session guest/confine
LAYER_host           := common/base common/scrub common/channel common/git

LAYERS := common/base common/scrub common/channel common/git guest/stage guest/proc \
	guest/config guest/engine guest/confine guest/session guest/serve guest/init guest/cli host

# Tests, fuzz targets and benches see every layer.
ALL_LAYER_INC := $(foreach l,$(LAYERS),-I$(l))

# $(call layer_inc,SOURCE): -I flags for the folder SOURCE lives in; tests/ and bench/ get all.
layer_dir = $(patsubst %/,%,$(dir $(1)))
layer_inc = $(if $(filter $(call layer_dir,$(1)),$(LAYERS)), \
	$(foreach l,$(call layer_dir,$(1)) $(LAYER_$(call layer_dir,$(1))),-I$(l)), \
	$(ALL_LAYER_INC))

# One recipe for every static archive of every build (dynamic, sanitizer, static, fuzz).
define archive_recipe
@rm -f $@
@$(AR) rcs $@ $^
endef
