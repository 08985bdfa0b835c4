! Fixed step: sea-ice fraction climatology (none south of 55N).
!
!   seaice NAMELIST SEAMASK OUT
program seaice
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'seaice NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = (1.0_dp - m) * max(0.0_dp, (y - 55.0_dp) / 5.0_dp)
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)
  a = a * (1.0_dp - mask)
  call write_one(arg(3), 'seaice', a)
end program seaice
