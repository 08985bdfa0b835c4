! Fixed step: soil texture category (1 sand, 6 loam, 12 clay, 14 water) from a smoothed sand fraction.
!
!   soiltype NAMELIST SEAMASK OUT
program soiltype
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'soiltype NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = m * (0.2_dp + 0.7_dp * d)
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)
  do j = 1, ny
    do i = 1, nx
      if (mask(i, j) < 0.5_dp) then
        a(i, j) = 14
      else if (a(i, j) > 0.55_dp) then
        a(i, j) = 1
      else if (a(i, j) > 0.3_dp) then
        a(i, j) = 6
      else
        a(i, j) = 12
      end if
    end do
  end do
  call write_one(arg(3), 'soiltype', a)
end program soiltype
