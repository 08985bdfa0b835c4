! Fixed step: sub-grid standard deviation of terrain height (m), from 7 x 7 samples per cell.
!
!   stdh NAMELIST SEAMASK OUT
program stdh
  use nmmb_io
  implicit none
  real(dp), allocatable :: mask(:, :), a(:, :)
  integer :: i, j
  real(dp) :: x, y, m, h, d, r
  integer :: p, q
  real(dp) :: s1, s2, hv
  call need_args(3, 'stdh NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  allocate(a(nx, ny))
  do j = 1, ny
    do i = 1, nx
      x = lon(i); y = lat(j); m = mask(i, j); h = height(x, y); d = desertness(x, y)
      r = y * pi / 180.0_dp
      s1 = 0; s2 = 0
      do q = -3, 3
        do p = -3, 3
          hv = height(x + p * 90.0_dp / nx / 7.0_dp, y + q * 60.0_dp / ny / 7.0_dp)
          s1 = s1 + hv; s2 = s2 + hv * hv
        end do
      end do
      a(i, j) = m * sqrt(max(0.0_dp, s2 / 49.0_dp - (s1 / 49.0_dp)**2))
    end do
  end do
  call smooth(a, fixed_work, 0.1_dp)

  call write_one(arg(3), 'stdh', a)
end program stdh
