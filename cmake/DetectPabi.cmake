# Which private provider ABI does the installed libibverbs export?
# A provider built for one ABI cannot be loaded by another, so refuse early.
include(CheckCSourceCompiles)
set(_pabi_found "")
foreach(_pabi 34 57 59 64)
  set(CMAKE_REQUIRED_LIBRARIES ${IBVERBS_LIB})
  check_c_source_compiles("
    void verbs_register_driver_${_pabi}(const void *ops);
    int main(void) { verbs_register_driver_${_pabi}((const void *)0); return 0; }"
    VFAB_HAVE_PABI_${_pabi})
  unset(CMAKE_REQUIRED_LIBRARIES)
  if(VFAB_HAVE_PABI_${_pabi})
    set(_pabi_found ${_pabi})
  endif()
endforeach()
if(NOT _pabi_found STREQUAL "34")
  if(_pabi_found STREQUAL "")
    message(FATAL_ERROR "vfab: ${IBVERBS_LIB} exports no verbs_register_driver_NN: "
      "is libibverbs (rdma-core) installed?")
  endif()
  message(FATAL_ERROR "vfab: the installed libibverbs uses private provider ABI "
    "${_pabi_found}; vfab supports ABI 34 (rdma-core 36 to 56: Debian 12, "
    "Ubuntu 24.04, Debian 13). Install a supported rdma-core.")
endif()
set(VFAB_PABI ${_pabi_found})
message(STATUS "vfab: libibverbs private provider ABI ${VFAB_PABI}")
