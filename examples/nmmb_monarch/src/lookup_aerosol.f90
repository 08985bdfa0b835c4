! Fixed step: optical look-up table of the 8 dust size bins at 550 nm:
! radius (um), extinction efficiency Q (anomalous-diffraction approximation,
! averaged over a lognormal size distribution inside the bin, with
! 100 + 10 * fixed_work sub-radii) and mass extinction efficiency (m2/g).
!
!   lookup_aerosol NAMELIST SEAMASK OUT     (the seamask is read for the grid only)
program lookup_aerosol
  use nmmb_io
  implicit none
  integer, parameter :: nbin = 8
  real(dp), parameter :: lambda = 0.55_dp, nre = 1.53_dp, rho = 2.6_dp   ! um, -, g/cm3
  real(dp), allocatable :: mask(:, :)
  real(dp) :: tab(nbin, 3), r0, r1, r, q, pp, w, sw, sq, sa, sv
  integer :: b, k, ns
  call need_args(3, 'lookup_aerosol NAMELIST SEAMASK OUT')
  call read_namelist(arg(1))
  call read_one(arg(2), mask, 'seamask')
  ns = 100 + 10 * fixed_work
  do b = 1, nbin
    r0 = 0.1_dp * 2.0_dp**(b - 1); r1 = 2.0_dp * r0
    sw = 0; sq = 0; sa = 0; sv = 0
    do k = 1, ns
      r = r0 * (r1 / r0)**((real(k, dp) - 0.5_dp) / ns)
      w = exp(-0.5_dp * (log(r / 1.5_dp) / 0.9_dp)**2)
      pp = 4.0_dp * pi * r * (nre - 1.0_dp) / lambda
      q = 2.0_dp - 4.0_dp / pp * sin(pp) + 4.0_dp / pp**2 * (1.0_dp - cos(pp))
      sw = sw + w; sq = sq + w * q * r * r; sa = sa + w * r * r; sv = sv + w * r**3
    end do
    tab(b, 1) = sqrt(r0 * r1)
    tab(b, 2) = sq / sa
    ! MEE = 3 Q_eff / (4 rho r_eff), r_eff = <r^3>/<r^2>; um and g/cm3 -> m2/g
    tab(b, 3) = 3.0_dp * tab(b, 2) / (4.0_dp * rho * (sv / sa))
  end do
  call write_one(arg(3), 'aerosol_lookup', tab)
end program lookup_aerosol
