# MPI for the tests, examples and benchmarks that run under mpirun (include()d where needed; the
# library itself needs no MPI: distributed/mpi*.hpp include <mpi.h> for the programs that use them).
# Included by each directory that needs it: FindMPI's imported target is local to a directory.
#   MIXPREC_MPI_FOUND        MPI's C API and mpiexec were found (target MPI::MPI_CXX)
#   MIXPREC_MPI_FLAGS        mpiexec flags for this machine (Open MPI: --oversubscribe)
#   MIXPREC_MPI_ENVIRONMENT  what the runs need in their environment (a CTest ENVIRONMENT list)

# The project enables only C++: MPI's C API through the CXX component, without the MPI-2 C++
# bindings (mpi.hpp uses only the C API).
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI QUIET COMPONENTS CXX)
set(MIXPREC_MPI_FOUND FALSE)
set(MIXPREC_MPI_FLAGS)
set(MIXPREC_MPI_ENVIRONMENT)
if(MPI_CXX_FOUND AND MPIEXEC_EXECUTABLE)
  set(MIXPREC_MPI_FOUND TRUE)
  execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE mixprec_mpiexec_version ERROR_QUIET)
  if(mixprec_mpiexec_version MATCHES "Open MPI|OpenRTE")
    # More ranks than cores on small CI machines; root in containers (harmless otherwise);
    # shared memory only, so that it also runs in a container without a network; no
    # cross-memory attach (blocked by ptrace restrictions in many containers).
    set(MIXPREC_MPI_FLAGS --oversubscribe)
    set(MIXPREC_MPI_ENVIRONMENT OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_pml=ob1
                                OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none)
  endif()
  if(MIXPREC_SANITIZE)
    # OpenMPI's runtime leaks thousands of small blocks at exit (ompi_op_base_op_select and
    # more); leak checking of mixprec's own code is done by the unit tests.
    list(APPEND MIXPREC_MPI_ENVIRONMENT ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
  endif()
endif()
