! Fixed step: land-use category (USGS-like: 16 water, 19 barren, 14 forest, 9 shrub, 7 grassland) from a smoothed greenness.
!
!   landuse NAMELIST SEAMASK OUT
program landuse
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'landuse NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = m * (1.0_dp - d) * cos(r)
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)
  do j = 1, ny
    do i = 1, nx
      if (mask(i, j) < 0.5_dp) then
        a(i, j) = 16
      else if (a(i, j) < 0.15_dp) then
        a(i, j) = 19
      else if (lat(j) > 45.0_dp) then
        a(i, j) = 14
      else if (height(lon(i), lat(j)) > 1500.0_dp) then
        a(i, j) = 9
      else
        a(i, j) = 7
      end if
    end do
  end do
  call write_one(arg(3), 'landuse', a)
end program landuse
