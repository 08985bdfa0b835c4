! Fixed step: terrain height (m) on land, smoothed.
!
!   smmount NAMELIST SEAMASK OUT
program smmount
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'smmount NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = m * h
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)
  a = a * mask
  call write_one(arg(3), 'topography', a)
end program smmount
