! UMO model (per day): the NEMS/NMMB-MONARCH stand-in, an MPI program.
!
! Advances a 2-D dust column load c (g/m2) over one simulated day:
!   dc/dt = -u dc/dx - v dc/dy + K lap(c) + E - (k_dry + k_wet P) c
! with first-order upwind advection, explicit diffusion, wind-driven emission
! above a threshold friction velocity over erodible land, and dry and wet
! (precipitation) deposition. Periodic in x, zero-gradient in y.
!
! The grid's rows are split over the ranks; each step exchanges one halo row
! with each neighbour (MPI_Sendrecv). Every point is updated by the same
! arithmetic whatever the rank count, and all sums are done on rank 0 after
! a gather, so the output files are byte-identical for any number of ranks.
!
!   umo_model NAMELIST DAY SEAMASK DUST_SOURCE ROUGHNESS INPUT RESTART_IN HISTORY_OUT RESTART_OUT
! stdout: the run log (rank 0); stderr: diagnostics.
program umo_model
  use mpi
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), src(:, :), z0(:, :), uu(:, :), vv(:, :), pr(:, :), ut(:, :)
  real(dp), allocatable :: c(:, :), cn(:, :), full(:, :)
  integer, allocatable :: counts(:), displs(:)
  integer :: ierr, rank, nprocs, day, j0, j1, nrow, r, i, j, ip, im, step, u, k, up, down
  integer :: stat(MPI_STATUS_SIZE)
  real(dp) :: dx, dt, kdiff, t, gust, ws, ustar, emis, dcdx, dcdy, lap, cfl, mass, cmax
  real(dp), parameter :: kdry = 1.0_dp / (2.0_dp * 86400.0_dp), kwet = 4.0e-6_dp, cemis = 2.0e-4_dp
  character(len=32) :: name

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  if (command_argument_count() /= 9) then
    if (rank == 0) write(0, '(a)') 'usage: umo_model NAMELIST DAY SEAMASK DUST_SOURCE ROUGHNESS ' // &
                                   'INPUT RESTART_IN HISTORY_OUT RESTART_OUT'
    call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  end if
  call read_namelist(arg(1))
  day = iarg(2)
  if (ny < nprocs) call die('umo_model: more ranks than grid rows')

  ! rank 0 reads every input; all ranks get full copies (small 2-D fields)
  if (rank == 0) then
    call read_one(arg(3), mask, 'seamask')
    call read_one(arg(4), src, 'dust_source')
    call read_one(arg(5), z0, 'roughness')
    call open_in(arg(6), u)
    call get_field(u, uu, 'u'); call get_field(u, vv, 'v')
    call get_field(u, pr, 'precip'); call get_field(u, ut, 'ustar_t')
    close(u)
    call read_one(arg(7), full, 'dust')
  else
    allocate(mask(nx, ny), src(nx, ny), z0(nx, ny), uu(nx, ny), vv(nx, ny), pr(nx, ny), &
             ut(nx, ny), full(nx, ny))
  end if
  call bcast(mask); call bcast(src); call bcast(z0); call bcast(uu); call bcast(vv)
  call bcast(pr); call bcast(ut); call bcast(full)

  ! row decomposition
  allocate(counts(0:nprocs - 1), displs(0:nprocs - 1))
  do r = 0, nprocs - 1
    counts(r) = (ny / nprocs + merge(1, 0, r < mod(ny, nprocs))) * nx
  end do
  displs(0) = 0
  do r = 1, nprocs - 1
    displs(r) = displs(r - 1) + counts(r - 1)
  end do
  j0 = displs(rank) / nx + 1; nrow = counts(rank) / nx; j1 = j0 + nrow - 1
  up = merge(rank + 1, MPI_PROC_NULL, rank < nprocs - 1)
  down = merge(rank - 1, MPI_PROC_NULL, rank > 0)
  allocate(c(nx, j0 - 1:j1 + 1), cn(nx, j0:j1))
  c(:, j0:j1) = full(:, j0:j1)

  dx = 90.0_dp / nx * 111.0e3_dp
  dt = 86400.0_dp / model_steps
  cfl = (maxval(abs(uu)) + maxval(abs(vv))) * dt / dx
  if (cfl > 0.9_dp) call die('umo_model: CFL > 0.9; raise model_steps')
  kdiff = 0.05_dp * dx * dx / dt
  if (rank == 0) then
    write(*, '(a,i0,a,i0,a,i0,a,i0)') 'umo_model: day ', day, ', grid ', nx, ' x ', ny, ', steps ', model_steps
    write(*, '(a,f10.2,a,f8.5)') 'umo_model: dt (s) ', dt, ', CFL ', cfl
    write(0, '(a,i0,a)') 'umo_model: running on ', nprocs, ' ranks'
  end if
  call open_history()

  do step = 1, model_steps
    t = (step - 1) * dt
    call halo()
    gust = 1.0_dp + 0.3_dp * sin(2.0_dp * pi * t / 86400.0_dp - 0.5_dp * pi)
    do j = j0, j1
      do i = 1, nx
        ip = i + 1; if (ip > nx) ip = 1
        im = i - 1; if (im < 1) im = nx
        if (uu(i, j) > 0) then
          dcdx = (c(i, j) - c(im, j)) / dx
        else
          dcdx = (c(ip, j) - c(i, j)) / dx
        end if
        if (vv(i, j) > 0) then
          dcdy = (c(i, j) - c(i, j - 1)) / dx
        else
          dcdy = (c(i, j + 1) - c(i, j)) / dx
        end if
        lap = (c(ip, j) + c(im, j) + c(i, j + 1) + c(i, j - 1) - 4.0_dp * c(i, j)) / (dx * dx)
        ws = sqrt(uu(i, j)**2 + vv(i, j)**2) * gust
        ustar = 0.4_dp * ws / log(10.0_dp / z0(i, j))
        emis = 0.0_dp
        if (ustar > ut(i, j) .and. mask(i, j) > 0.5_dp) &
          emis = cemis * src(i, j) * ustar**3 * (1.0_dp - (ut(i, j) / ustar)**2) * (1.0_dp + ut(i, j) / ustar)
        cn(i, j) = c(i, j) + dt * (-uu(i, j) * dcdx - vv(i, j) * dcdy + kdiff * lap + emis &
                   - (kdry + kwet * pr(i, j)) * c(i, j))
        cn(i, j) = max(0.0_dp, cn(i, j))
      end do
    end do
    c(:, j0:j1) = cn
    if (nhist > 0) then
      if (mod(step * nhist, model_steps) == 0) call snapshot(step)
    end if
  end do

  call gather()
  if (rank == 0) then
    close(u)
    call open_out(arg(9), k)
    call put_exact(k, 'dust', full)
    close(k)
    write(*, '(a)') 'umo_model: restart written'
  end if
  call MPI_Finalize(ierr)

contains

  subroutine bcast(a)
    real(dp), intent(inout) :: a(:, :)
    call MPI_Bcast(a, size(a), MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  end subroutine bcast

  subroutine halo()
    call MPI_Sendrecv(c(:, j1), nx, MPI_DOUBLE_PRECISION, up, 1, &
                      c(:, j0 - 1), nx, MPI_DOUBLE_PRECISION, down, 1, MPI_COMM_WORLD, stat, ierr)
    call MPI_Sendrecv(c(:, j0), nx, MPI_DOUBLE_PRECISION, down, 2, &
                      c(:, j1 + 1), nx, MPI_DOUBLE_PRECISION, up, 2, MPI_COMM_WORLD, stat, ierr)
    if (j0 == 1) c(:, 0) = c(:, 1)
    if (j1 == ny) c(:, ny + 1) = c(:, ny)
  end subroutine halo

  subroutine gather()
    call MPI_Gatherv(c(:, j0:j1), nx * nrow, MPI_DOUBLE_PRECISION, full, counts, displs, &
                     MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  end subroutine gather

  subroutine open_history()
    if (rank == 0) then
      call open_out(arg(8), u)
      write(u, '(a,i0,a,i0)') 'HISTORY day ', day, ' snapshots ', nhist
    end if
  end subroutine open_history

  subroutine snapshot(s)
    integer, intent(in) :: s
    integer :: hour, ii, jj
    call gather()
    if (rank == 0) then
      hour = nint(s * dt / 3600.0_dp)
      write(name, '(a,i2.2,a,i2.2)') 'dust_day', day, '_h', hour
      call put_field(u, name, full)
      mass = 0; cmax = 0
      do jj = 1, ny
        do ii = 1, nx
          mass = mass + full(ii, jj) * dx * dx * cos(lat(jj) * pi / 180.0_dp)
          cmax = max(cmax, full(ii, jj))
        end do
      end do
      write(*, '(a,i2.2,a,i6,a,ES14.6E2,a,ES14.6E2)') 'umo_model: +', hour, 'h step ', s, &
        ' total dust (Tg) ', mass * 1.0e-12_dp, ' max load (g/m2) ', cmax
    end if
  end subroutine snapshot

end program umo_model
