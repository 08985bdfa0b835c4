! Fixed step: snow-free surface albedo.
!
!   albedo NAMELIST SEAMASK OUT
program albedo
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'albedo NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = m * (0.15_dp + 0.25_dp * d) + (1.0_dp - m) * 0.06_dp
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)

  call write_one(arg(3), 'albedo', a)
end program albedo
