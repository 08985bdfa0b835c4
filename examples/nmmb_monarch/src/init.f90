! Initialization: read the user's namelist-style config (defaults for what it
! leaves out), write the run's complete namelist, the land-sea mask of the
! model grid, the "global analysis" every simulated day's Variable step
! degribs (coarse fields per day, a GRIB stand-in) and the cold-start
! concentration the first day's model run restarts from.
!
!   init CONFIG NAMELIST_OUT SEAMASK_OUT GFS_OUT RESTART0_OUT
program init
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), c0(:, :), f(:, :)
  integer :: i, j, d, k, u, mc, nc
  real(dp) :: x, y, coast
  character(len=32) :: name
  character(len=*), parameter :: names(4) = [character(len=8) :: 'u', 'v', 'precip', 'soilw']

  call need_args(5, 'init CONFIG NAMELIST_OUT SEAMASK_OUT GFS_OUT RESTART0_OUT')
  call read_namelist(arg(1))
  call write_namelist(arg(2))

  allocate(mask(nx, ny), c0(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j)
      ! Africa + Eurasia land masses, the Mediterranean and the Atlantic as sea
      coast = 1.0_dp
      if (x < -17.0_dp + 6.0_dp * sin(y / 9.0_dp)) coast = 0.0_dp
      if (y > 31.0_dp .and. y < 31.0_dp + 12.0_dp * exp(-((x - 15.0_dp) / 14.0_dp)**2) &
          .and. x > -6.0_dp .and. x < 36.0_dp) coast = 0.0_dp
      if (x > 33.0_dp .and. x < 43.0_dp .and. y > 12.0_dp .and. y < 30.0_dp - 0.4_dp * (x - 33.0_dp)) coast = 0.0_dp
      if (y < 5.0_dp .and. x < 9.0_dp) coast = 0.0_dp
      mask(i, j) = coast
      c0(i, j) = 1.0e-3_dp * coast * desertness(x, y)
    end do
  end do
  call write_one(arg(3), 'seamask', mask)

  ! The coarse "analysis": (nx/4+1) x (ny/4+1) points, four fields per day.
  mc = nx / 4 + 1; nc = ny / 4 + 1
  allocate(f(mc, nc))
  call open_out(arg(4), u)
  write(u, '(a,1x,i0)') 'GFS days', days
  do d = 1, days
    do k = 1, 4
      do j = 1, nc
        do i = 1, mc
          x = -30.0_dp + 90.0_dp * real(i - 1, dp) / real(mc - 1, dp)
          y = 60.0_dp * real(j - 1, dp) / real(nc - 1, dp)
          select case (k)
          case (1)   ! zonal wind, m/s: trades in the south, westerlies in the north
            f(i, j) = -6.0_dp * cos(pi * y / 60.0_dp) - 6.0_dp * exp(-((y - 22.0_dp) / 8.0_dp)**2) &
                      + 9.0_dp * exp(-((y - 45.0_dp) / 10.0_dp)**2) &
                      + 3.0_dp * sin((x + 20.0_dp * d) / 15.0_dp)
          case (2)   ! meridional wind: a travelling wave
            f(i, j) = 4.0_dp * sin((x - 25.0_dp * d) / 12.0_dp) * cos((y - 30.0_dp) / 20.0_dp)
          case (3)   ! precipitation, mm/day
            f(i, j) = max(0.0_dp, 8.0_dp * exp(-((y - 8.0_dp) / 5.0_dp)**2) &
                      + 5.0_dp * exp(-((y - 48.0_dp) / 6.0_dp)**2) * (1.0_dp + sin((x - 30.0_dp * d) / 10.0_dp)) - 1.0_dp)
          case (4)   ! top-layer soil moisture, m3/m3
            f(i, j) = 0.05_dp + 0.3_dp * (1.0_dp - desertness(x, y)) + 0.01_dp * d
          end select
        end do
      end do
      write(name, '(a,a,i2.2)') trim(names(k)), '_day', d
      call put_field(u, name, f)
    end do
  end do
  close(u)

  call open_out(arg(5), u)
  call put_exact(u, 'dust', c0)
  close(u)
  write(*, '(a,i0,a,i0,a,i0,a)') 'init: grid ', nx, ' x ', ny, ', ', days, ' days'
end program init
