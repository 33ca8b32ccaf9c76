# Unit tests of provider/: the QP state machine, the memory key checks, raw
# frames and their flow rules, the copies between processes and their split
# over copy engines, the delivery lead, and the libibverbs layout and enum
# facts the provider relies on.
vfab_unit_test(test_qp_state SOURCES unit/test_qp_state.c LIBS vfab_provider_checks)
vfab_unit_test(test_mr_check SOURCES unit/test_mr_check.c LIBS vfab_provider_checks)
vfab_unit_test(test_flow SOURCES unit/test_flow.c LIBS vfab_provider_checks)
vfab_unit_test(test_abi_layout SOURCES unit/test_abi_layout.c)
vfab_unit_test(test_xfer SOURCES unit/test_xfer.c LIBS vfab_provider_checks)
vfab_unit_test(test_lead SOURCES unit/test_lead.c LIBS vfab_provider_checks)
vfab_unit_test(test_split SOURCES unit/test_split.c LIBS vfab_provider_checks)
vfab_unit_test(test_dma SOURCES unit/test_dma.c LIBS vfab_provider_checks)
