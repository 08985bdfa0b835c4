! Variable step (per day), 4/4: merge winds and soil fields into the model's
! input file for the day, with the friction-velocity threshold of dust
! emission (raised by soil moisture) precomputed.
!
!   prep_bc NAMELIST WINDS SOIL OUT
program prep_bc
  use nmmb_io
  implicit none
  real(dp), allocatable :: uu(:, :), vv(:, :), pr(:, :), sw(:, :), ut(:, :)
  integer :: u, o
  call need_args(4, 'prep_bc NAMELIST WINDS SOIL OUT')
  call read_namelist(arg(1))
  call open_in(arg(2), u)
  call get_field(u, uu, 'u')
  call get_field(u, vv, 'v')
  close(u)
  call open_in(arg(3), u)
  call get_field(u, pr, 'precip')
  call get_field(u, sw, 'soilw')
  close(u)
  allocate(ut(nx, ny))
  ! threshold friction velocity (m/s): 0.2 on dry soil, rising with soil moisture
  ut = 0.2_dp * (1.0_dp + 8.0_dp * max(0.0_dp, sw - 0.06_dp))
  call open_out(arg(4), o)
  call put_field(o, 'u', uu)
  call put_field(o, 'v', vv)
  call put_field(o, 'precip', pr)
  call put_field(o, 'ustar_t', ut)
  close(o)
end program prep_bc
