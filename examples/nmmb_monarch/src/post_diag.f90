! Post-process (per day), 2/2: diagnostics on the output grid: column load
! (g/m2), aerosol optical depth at 550 nm (load x mass extinction
! efficiency, the bins weighted by a fixed size distribution from the
! look-up table), and domain statistics (area-weighted means, maxima,
! dusty-area fraction, the 90th AOD percentile by 40 + post_work bisection
! steps).
!
!   post_diag NAMELIST REGRID AEROSOL_LOOKUP OUT
program post_diag
  use nmmb_io
  implicit none
  real(dp), allocatable :: om(:, :), ol(:, :), os(:, :), tab(:, :), aod(:, :)
  real(dp), parameter :: binfrac(8) = [0.02_dp, 0.05_dp, 0.12_dp, 0.21_dp, 0.25_dp, 0.19_dp, 0.11_dp, 0.05_dp]
  real(dp) :: mee, sw, sa, sl, w, amax, lo, hi, mid, frac
  integer :: u, o, i, j, it, m, n
  call need_args(4, 'post_diag NAMELIST REGRID AEROSOL_LOOKUP OUT')
  call read_namelist(arg(1))
  call open_in(arg(2), u)
  call get_field(u, om, 'load_mean'); call get_field(u, ol, 'load_end'); call get_field(u, os, 'load_smooth')
  close(u)
  call open_in(arg(3), u)
  call get_field(u, tab, 'aerosol_lookup')
  close(u)
  mee = sum(binfrac * tab(:, 3))
  m = size(om, 1); n = size(om, 2)
  aod = om * mee
  sw = 0; sa = 0; sl = 0; frac = 0
  do j = 1, n
    w = cos((60.0_dp * (real(j, dp) - 0.5_dp) / n) * pi / 180.0_dp)
    do i = 1, m
      sw = sw + w; sa = sa + w * aod(i, j); sl = sl + w * om(i, j)
      if (aod(i, j) > 0.5_dp) frac = frac + w
    end do
  end do
  amax = maxval(aod)
  ! 90th percentile of AOD by bisection on the area-weighted distribution
  lo = 0; hi = amax
  do it = 1, 40 + post_work
    mid = 0.5_dp * (lo + hi)
    if (area_below(mid) < 0.9_dp) then
      lo = mid
    else
      hi = mid
    end if
  end do
  call open_out(arg(4), o)
  write(o, '(a,ES16.8E2)') 'STAT mass_extinction_m2_per_g ', mee
  write(o, '(a,ES16.8E2)') 'STAT mean_load_g_per_m2 ', sl / sw
  write(o, '(a,ES16.8E2)') 'STAT mean_aod ', sa / sw
  write(o, '(a,ES16.8E2)') 'STAT max_aod ', amax
  write(o, '(a,ES16.8E2)') 'STAT p90_aod ', hi
  write(o, '(a,ES16.8E2)') 'STAT area_aod_gt_0.5 ', frac / sw
  call put_field(o, 'load', om)
  call put_field(o, 'aod', aod)
  call put_field(o, 'aod_end', ol * mee)
  call put_field(o, 'aod_smooth', os * mee)
  close(o)

contains

  function area_below(x) result(f)
    real(dp), intent(in) :: x
    real(dp) :: f, ww
    integer :: ii, jj
    f = 0
    do jj = 1, n
      ww = cos((60.0_dp * (real(jj, dp) - 0.5_dp) / n) * pi / 180.0_dp)
      do ii = 1, m
        if (aod(ii, jj) <= x) f = f + ww
      end do
    end do
    f = f / sw
  end function area_below
end program post_diag
