/* wulf's MPI path probe: two ranks exchange one byte and exit, so that the
 * library has chosen, set up and (asked to) reported its data path. */
#include <mpi.h>

int main(int argc, char **argv)
{
    int rank = 0, size = 1;
    char byte = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1 && rank == 0) {
        MPI_Send(&byte, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&byte, 1, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (size > 1 && rank == 1) {
        MPI_Recv(&byte, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&byte, 1, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
