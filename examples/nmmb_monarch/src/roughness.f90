! Fixed step: surface roughness length z0 (m).
!
!   roughness NAMELIST SEAMASK OUT
program roughness
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'roughness NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = m * (0.01_dp + 0.5_dp * (1.0_dp - d) * cos(r)**2 + 2.0e-4_dp * h) + (1.0_dp - m) * 1.0e-4_dp
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)
  a = max(a, 1.0e-5_dp)
  call write_one(arg(3), 'roughness', a)
end program roughness
