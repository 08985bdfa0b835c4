! Fixed step: deep-soil temperature (K) from latitude and elevation.
!
!   deeptemperature NAMELIST SEAMASK OUT
program deeptemperature
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r

  call need_args(3, 'deeptemperature NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      a(i, j) = 300.0_dp - 35.0_dp * sin(r)**2 - 0.0065_dp * h * m
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)

  call write_one(arg(3), 'deeptemp', a)
end program deeptemperature
