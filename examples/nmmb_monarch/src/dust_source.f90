! Fixed step: dust erodibility (0..1): bare, dry, desert land.
!
!   dust_source NAMELIST SEAMASK OUT
program dust_source
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'dust_source NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = m * d**2 * (1.0_dp - 0.5_dp * cos(r)**4)
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)
  a = max(0.0_dp, min(1.0_dp, a)) * mask
  call write_one(arg(3), 'dust_source', a)
end program dust_source
