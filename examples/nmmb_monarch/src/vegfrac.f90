! Fixed step: green vegetation fraction.
!
!   vegfrac NAMELIST SEAMASK OUT
program vegfrac
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'vegfrac NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = m * (1.0_dp - d) * (0.3_dp + 0.6_dp * cos((y - 10.0_dp) * pi / 180.0_dp)**2)
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)
  a = max(0.0_dp, min(1.0_dp, a)) * mask
  call write_one(arg(3), 'vegfrac', a)
end program vegfrac
