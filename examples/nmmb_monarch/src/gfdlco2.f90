! Fixed step: CO2 transmission table of the GFDL radiation scheme stand-in:
! T(k,l) between 40 pressure levels, a band-averaged exp(-kappa * path),
! integrated over 20 + fixed_work spectral bands.
!
!   gfdlco2 NAMELIST SEAMASK OUT      (the seamask is read for the grid only)
program gfdlco2
  use nmmb_io
  implicit none
  integer, parameter :: nlev = 40
  real(dp), allocatable :: mask(:, :)
  real(dp) :: t(nlev, nlev), p(nlev), kappa, path
  integer :: k, l, b, nb
  call need_args(3, 'gfdlco2 NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  do k = 1, nlev
    p(k) = 1000.0_dp * (real(k, dp) / nlev)**1.5_dp
  end do
  nb = 20 + fixed_work
  t = 0
  do b = 1, nb
    kappa = 1.0e-4_dp * 10.0_dp**(4.0_dp * (real(b, dp) - 0.5_dp) / nb)
    do l = 1, nlev
      do k = 1, nlev
        path = abs(p(k)**2 - p(l)**2) / 2000.0_dp
        t(k, l) = t(k, l) + exp(-kappa * path) / nb
      end do
    end do
  end do
  call write_one(arg(3), 'co2_transmission', t)
end program gfdlco2
