# RDMA middleware as judges of the fabric (issue 9): UCX (ucx_perftest and a
# sockaddr client/server of our own), Open MPI and MPICH over UCX. Each
# script brings up a fabric of its own, named after VFAB_IT_FABRIC so that
# runs beside someone else's do not collide: <it>u (UCX, 2 nodes), <it>m
# (Open MPI, 2 and then 4 nodes), <it>h (MPICH, 2 nodes). They need
# ucx-utils, libucx-dev, openmpi-bin, libopenmpi-dev, mpich and libmpich-dev
# (quickstart installs them); a test whose tools are missing is not built.
find_path(VFAB_UCP_INCLUDE ucp/api/ucp.h)
find_library(VFAB_UCP_LIB ucp)
find_library(VFAB_UCS_LIB ucs)
find_package(MPI COMPONENTS C QUIET)

set(_vfab_mw_env "VFAB_BUILD_DIR=${CMAKE_BINARY_DIR}")

if(VFAB_UCP_INCLUDE AND VFAB_UCP_LIB AND VFAB_UCS_LIB)
  add_executable(ucx_sockaddr ${CMAKE_CURRENT_LIST_DIR}/ucx_sockaddr.c)
  target_include_directories(ucx_sockaddr PRIVATE ${VFAB_UCP_INCLUDE})
  target_link_libraries(ucx_sockaddr PRIVATE ${VFAB_UCP_LIB} ${VFAB_UCS_LIB})

  add_test(NAME int_ucx_perftest COMMAND ${CMAKE_CURRENT_LIST_DIR}/ucx.sh perftest)
  # CI: 120 s connected and exchanging (UCX's keepalive once cut it at ~50 s).
  add_test(NAME int_ucx_sockaddr COMMAND ${CMAKE_CURRENT_LIST_DIR}/ucx.sh sockaddr 120)
  set_tests_properties(int_ucx_perftest PROPERTIES TIMEOUT 600)
  set_tests_properties(int_ucx_sockaddr PROPERTIES TIMEOUT 300)
  set_tests_properties(int_ucx_perftest int_ucx_sockaddr PROPERTIES
    LABELS integration RUN_SERIAL TRUE
    ENVIRONMENT "${_vfab_mw_env};VFAB_FABRIC=${VFAB_IT_FABRIC}u")
else()
  message(STATUS "libucx-dev not found: the UCX integration tests are not built")
endif()

if(MPI_C_FOUND)
  add_executable(mpi_check ${CMAKE_CURRENT_LIST_DIR}/mpi_check.c)
  target_link_libraries(mpi_check PRIVATE MPI::MPI_C)
  add_test(NAME int_mpi COMMAND ${CMAKE_CURRENT_LIST_DIR}/mpi.sh)
  # Exit 77 = skipped: no sshd, so mpirun cannot start the remote ranks.
  set_tests_properties(int_mpi PROPERTIES
    LABELS integration RUN_SERIAL TRUE TIMEOUT 600 SKIP_RETURN_CODE 77
    ENVIRONMENT "${_vfab_mw_env};VFAB_FABRIC=${VFAB_IT_FABRIC}m")
else()
  message(STATUS "MPI (libopenmpi-dev) not found: the Open MPI integration test is not built")
endif()

# MPICH (Debian's is ch4:ucx) beside Open MPI: mpi_check again, built against
# libmpich-dev through its pkg-config file, launched by mpiexec.mpich (hydra).
pkg_check_modules(VFAB_MPICH QUIET mpich)
find_program(VFAB_MPIEXEC_MPICH mpiexec.mpich)
if(VFAB_MPICH_FOUND AND VFAB_MPIEXEC_MPICH)
  add_executable(mpi_check_mpich ${CMAKE_CURRENT_LIST_DIR}/mpi_check.c)
  target_include_directories(mpi_check_mpich PRIVATE ${VFAB_MPICH_INCLUDE_DIRS})
  target_link_libraries(mpi_check_mpich PRIVATE ${VFAB_MPICH_LINK_LIBRARIES})
  add_test(NAME int_mpich COMMAND ${CMAKE_CURRENT_LIST_DIR}/mpi.sh mpich)
  set_tests_properties(int_mpich PROPERTIES
    LABELS integration RUN_SERIAL TRUE TIMEOUT 300 SKIP_RETURN_CODE 77
    ENVIRONMENT "${_vfab_mw_env};VFAB_FABRIC=${VFAB_IT_FABRIC}h")
else()
  message(STATUS "MPICH (mpich, libmpich-dev) not found: the MPICH integration test is not built")
endif()
